/**
 * A heartbeat: a check healthd does not make but is told, by a job that pings it (see docs/guide/cron-jobs.md, "Watching
 * cron jobs"): when to expect the next ping, how late it may be, and how long a run may take.
 */
import { z } from "zod";
import { cron, integer, timezone } from "./common.ts";

const year = 31_536_000;

/** What a push token may be: Kuma makes 32 letters and digits; a few more characters need no escaping in a URL. */
export const pushTokenPattern = /^[A-Za-z0-9._~-]{1,100}$/;
const pushTokenRule = "must be an Uptime Kuma push token (1 to 100 letters, digits, or - _ . ~), true to have healthd make one, or null for none";

export const heartbeatFields = {
  periodSeconds: integer(1, year, 86_400).nullable().optional(),
  cron: cron.nullable().optional(),
  timezone: timezone.nullable().default(null),
  graceSeconds: integer(1, year, 3600).nullable().optional(),
  maxRunSeconds: integer(1, year, 3600).nullable().default(null),
  minRunSeconds: integer(1, year, 60).nullable().default(null),
  // A job's secret address: made by healthd when left out (and kept by a PUT that leaves it out).
  pingKey: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "must be a UUID in lower case such as 5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278, or left out")
    .optional(),
  // Uptime Kuma's push token, so its push URL /api/push/{pushToken} keeps working: true makes one (and keeps the
  // one it has), left out keeps the one it had, null takes it away.
  pushToken: z
    .union([z.literal(true), z.string().regex(pushTokenPattern, pushTokenRule)], { error: pushTokenRule })
    .nullable()
    .optional(),
  // Gatus's key of an external endpoint, so /api/v1/endpoints/{gatusKey}/external keeps working.
  gatusKey: z
    .string()
    .min(1, "must not be empty; give the key Gatus built (GROUP_NAME), or null")
    .max(300, "must be at most 300 characters")
    .refine((key) => !/[\s/"\\\u0000-\u001f\u007f]/.test(key) && key === key.toLowerCase(), {
      error: "must be a Gatus key, GROUP_NAME as Gatus makes it (lower case, without spaces, /, \" or \\; such as core_ext-ep-test), or null",
    })
    .nullable()
    .default(null),
  // A ping does not resume it while it is paused (Healthchecks.io's manual_resume): only a PUT unpauses it.
  manualResume: z.boolean().default(false),
};

type Fields = { periodSeconds?: unknown; cron?: unknown; timezone?: unknown; minRunSeconds?: unknown; maxRunSeconds?: unknown };

export function heartbeatRules(c: Fields, ctx: z.RefinementCtx): void {
  if ((c.periodSeconds == null) === (c.cron == null)) {
    ctx.addIssue({ code: "custom", path: ["periodSeconds"], message: "set either periodSeconds (how often the job runs) or cron (when it runs), one of the two" });
  }
  if (c.timezone != null && c.cron == null) ctx.addIssue({ code: "custom", path: ["timezone"], message: "goes with cron; set cron, or leave timezone out" });
  if (typeof c.minRunSeconds === "number" && typeof c.maxRunSeconds === "number" && c.minRunSeconds >= c.maxRunSeconds) {
    ctx.addIssue({ code: "custom", path: ["minRunSeconds"], message: `must be less than maxRunSeconds (${c.maxRunSeconds})` });
  }
}

/** As stored: the grace left out is a tenth of the time between runs, at least a second and at most an hour. */
export function heartbeatSchedule<T extends { periodSeconds?: number | null; cron?: string | null; graceSeconds?: number | null }>(c: T, gapSeconds: (cron: string) => number) {
  const { periodSeconds, cron, graceSeconds, ...rest } = c;
  const gap = cron != null ? gapSeconds(cron) : periodSeconds!;
  return {
    ...rest,
    periodSeconds: periodSeconds ?? null,
    cron: cron ?? null,
    graceSeconds: graceSeconds ?? Math.min(3600, Math.max(1, Math.round(gap / 10))),
  };
}
