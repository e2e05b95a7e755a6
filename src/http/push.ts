/**
 * POST /push/topics/{topic}: publish a test message through the configured ntfy server, to see that
 * notifications will arrive.
 */
import { z } from "zod";
import type { Publisher } from "../notify/ntfy.ts";
import { topic, validate } from "../schema.ts";
import { HttpError, invalid } from "./problem.ts";
import type { Route } from "./router.ts";

const priorities = { min: 1, low: 2, default: 3, high: 4, max: 5, urgent: 5 } as const;

const pushBody = z.strictObject({
  title: z.string().min(1).max(250).optional(),
  message: z
    .string()
    .refine((m) => Buffer.byteLength(m) <= 4096, "must be at most 4096 bytes (ntfy's message limit)")
    .optional(),
  priority: z
    .union([z.int().min(1).max(5), z.enum(Object.keys(priorities) as [keyof typeof priorities])], {
      error: "must be 1 to 5 or one of min, low, default, high, max, urgent",
    })
    .optional(),
  tags: z.array(z.string().min(1).max(100)).max(20).optional(),
});

export function pushRoutes(publisher: Publisher, version: string): Route[] {
  return [
    {
      path: "/push/topics/:topic",
      methods: {
        POST: async (req) => {
          const name = req.params.topic!;
          const errors = [];
          const topicOk = validate(topic, name);
          if (!topicOk.ok) errors.push({ path: "/topic", message: topicOk.errors[0]!.message });
          const parsed = validate(pushBody, (await req.json()) ?? {});
          if (!parsed.ok) errors.push(...parsed.errors);
          if (errors.length > 0 || !parsed.ok) throw invalid(errors, "the push request");
          const { title, message, priority, tags } = parsed.value;
          const result = await publisher.publish({
            topic: name,
            title: title ?? "healthd test notification",
            message: message ?? `This is a test notification from healthd ${version}. Notifications will arrive here.`,
            priority: typeof priority === "string" ? priorities[priority] : (priority ?? 3),
            tags: tags ?? ["healthd", "test"],
          });
          if (!result.ok) throw new HttpError(502, `the ntfy server did not take the message: ${result.error}`);
          return { status: 200, body: { id: result.id, time: new Date(result.time * 1000).toISOString(), topic: name } };
        },
      },
    },
  ];
}
