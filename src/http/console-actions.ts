/**
 * The console's actions: each a plain form POST to /console/actions/{action} carrying the session's CSRF token,
 * each needing a write token (testing a channel: admin, as the API's), each said in the log with who did it.
 * Each calls what the API's own endpoint calls (the store's addSilence, putService, renewPingKey,
 * patchAnnouncement; the channels' sendTest), so the console is no second implementation. The answer is a 303
 * back to the page, which says what was done. Acknowledging is the store's acknowledge, as POST /incidents/{id}/ack.
 */
import { z } from "zod";
import { serviceDocument } from "../domain/schema/index.ts";
import { validate } from "../domain/validate.ts";
import { permitScope, permitServer, mayUseAll } from "./access.ts";
import { checkForm, looking, type ConsoleContext } from "./console-access.ts";
import { HttpError, invalid } from "./problem.ts";
import { noService, refusable } from "./services.ts";
import type { Request, Response, Route } from "./router.ts";
import { servicePath } from "../console/overview.ts";
import { ackRefusal } from "./acknowledge.ts";

const target = { server: z.string().min(1).max(64), service: z.string().min(1).max(64), csrf: z.string().max(100).optional() };

const forms = {
  silence: z.strictObject({ ...target, minutes: z.coerce.number().int().min(1, "must be 1 to 10080 (a week)").max(10_080, "must be 1 to 10080 (a week)"), reason: z.string().max(200).optional() }),
  pause: z.strictObject(target),
  resume: z.strictObject(target),
  run: z.strictObject(target),
  "ping-key": z.strictObject(target),
  "test-channel": z.strictObject({ ...target, channel: z.string().min(1).max(64) }),
  ack: z.strictObject({ ...target, incident: z.coerce.number().int().positive(), note: z.string().max(1000, "must be at most 1000 characters").optional() }),
  "end-announcement": z.strictObject({ announcement: z.coerce.number().int().positive(), csrf: z.string().max(100).optional() }),
} as const;
type Action = keyof typeof forms;

export function consoleActions(ctx: ConsoleContext): Route[] {
  const { store } = ctx;
  const service = async (serverId: string, serviceId: string) => {
    const [found] = await store.services({ serverId, serviceId });
    if (!found) throw noService(serverId, serviceId);
    return found;
  };
  const back = (serverId: string, serviceId: string, done: string): Response => ({ status: 303, headers: { location: `${servicePath(serverId, serviceId)}?done=${done}`, "cache-control": "no-store" } });
  const setPaused = async (serverId: string, serviceId: string, paused: boolean) => {
    const s = await service(serverId, serviceId);
    if (s.check.paused === paused) return;
    const parsed = validate(serviceDocument, { id: s.id, name: s.name, tags: s.tags, check: { ...s.check, paused } });
    if (!parsed.ok) throw invalid(parsed.errors, "the service");
    const put = await refusable(store.putService(serverId, parsed.value, ctx.clock.now()));
    if (!put) throw noService(serverId, serviceId);
    await ctx.scheduleChanged(put.schedule);
  };

  /** What each action does, given its validated form; answers where to go. */
  const act = async (action: Action, f: Record<string, unknown>, who: string): Promise<Response> => {
    const now = ctx.clock.now();
    const server = f.server as string;
    const id = f.service as string;
    switch (action) {
      case "silence": {
        const added = await store.addSilence({ serverId: server, serviceId: id, startsAt: now, endsAt: now + (f.minutes as number) * 60_000, reason: (f.reason as string | undefined)?.trim() || null }, now);
        if (typeof added === "string") throw noService(server, id);
        ctx.changed([server]);
        return back(server, id, "silenced");
      }
      case "pause":
      case "resume":
        await setPaused(server, id, action === "pause");
        return back(server, id, action === "pause" ? "paused" : "resumed");
      case "run": {
        const s = await service(server, id);
        if (s.check.type === "heartbeat" || s.check.paused) throw new HttpError(409, `${server}/${id} is ${s.check.paused ? "paused: resume it first" : "a heartbeat: it runs when its job pings"}`);
        if (!ctx.runSoon(s.key)) throw new HttpError(409, `${server}/${id} is run by another node of the cluster; run it from that node's console`);
        return back(server, id, "run");
      }
      case "ping-key": {
        const s = await service(server, id);
        const pingKey = await store.renewPingKey(s.key);
        if (!pingKey) throw new HttpError(409, `${server}/${id} is not a heartbeat: only a heartbeat has a ping key`);
        await ctx.scheduleChanged({ started: [s.key], stopped: [] });
        return back(server, id, "ping-key");
      }
      case "test-channel": {
        await service(server, id);
        const result = await ctx.testChannel(f.channel as string);
        if (!result.ok) throw new HttpError(502, `${String(f.channel)} did not take the test message: ${result.error}`);
        return back(server, id, "tested");
      }
      case "ack": {
        const incident = await store.incident(f.incident as number);
        // Another service's incident is one this form does not know: the server was permitted, not the incident.
        if (!incident || incident.serverId !== server || incident.serviceId !== id) throw new HttpError(404, `no incident ${String(f.incident)} of ${server}/${id}`);
        const done = await store.acknowledge(incident.id, { by: who, note: (f.note as string | undefined)?.trim() || null, at: now });
        if (done.outcome !== "acknowledged") throw new HttpError(409, ackRefusal(done));
        ctx.acknowledged(done.incident);
        return back(server, id, "acknowledged");
      }
      case "end-announcement": {
        const changed = await store.patchAnnouncement(f.announcement as number, { ended: true }, now);
        if (!changed || "unknownServers" in changed) throw new HttpError(404, `no announcement ${String(f.announcement)}`);
        ctx.changed(changed.servers ?? []);
        return { status: 303, headers: { location: "/console?done=announcement-ended", "cache-control": "no-store" } };
      }
    }
  };

  const handle = async (req: Request): Promise<Response> => {
    const l = await looking(req, ctx.access);
    const action = req.params.action!;
    if (!Object.hasOwn(forms, action)) throw new HttpError(404, `no console action ${JSON.stringify(action.slice(0, 50))}; the actions are ${Object.keys(forms).join(", ")}`);
    const fields = new URLSearchParams((await req.body())?.text ?? "");
    const what = `POST /console/actions/${action}`;
    permitScope(l.who, action === "test-channel" ? "admin" : "write", what);
    checkForm(req, l, fields);
    const parsed = validate(forms[action as Action], Object.fromEntries(fields));
    if (!parsed.ok) throw invalid(parsed.errors, "the form");
    const f = parsed.value as Record<string, unknown>;
    // A channel is every server's (the API's POST /channels/{name}/test refuses a limited token): so does this.
    if (action === "test-channel") permitServer(l.who, undefined, what);
    if (typeof f.server === "string") {
      permitServer(l.who, f.server, what);
    } else if (action === "end-announcement") {
      const [found] = await store.announcements({ now: ctx.clock.now(), id: f.announcement as number, limit: 1 });
      if (!found || !mayUseAll(l.who, found.servers)) throw new HttpError(404, `no announcement ${String(f.announcement)}`);
    }
    const answer = await act(action as Action, f, l.who.name);
    const { csrf: _csrf, ...said } = f;
    ctx.log.info(`${what} by ${l.who.name}`, said);
    return answer;
  };

  return [
    {
      path: "/console/actions/:action",
      methods: {
        POST: {
          summary: "A console action, as a form (csrf, server, service, ...): silence, pause, resume, run, ping-key, test-channel, ack, end-announcement",
          operationId: "postConsoleAction",
          open: true,
          body: { schema: z.record(z.string(), z.string()), required: true, types: ["application/x-www-form-urlencoded"] },
          responses: {
            303: { description: "Done: back to the page, which says so" },
            400: { description: "A field of the form is invalid" },
            401: { description: "No token or session" },
            403: { description: "No CSRF token of this session, another origin, or a token that may not do this" },
            404: { description: "No such action, service, incident or announcement" },
            409: { description: "The service cannot do that (run a heartbeat, rotate the key of a check, acknowledge an incident closed or already acknowledged)" },
          },
          handle,
        },
      },
    },
  ];
}
