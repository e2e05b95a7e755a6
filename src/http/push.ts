/**
 * POST /push/topics/{topic}: publish a test message through the configured ntfy server, to see that
 * notifications will arrive. The body is JSON, or else the message itself as ntfy takes it: `curl -d "backup
 * done"` sends it form-encoded, and that is a message too.
 */
import { z } from "zod";
import type { Publisher } from "../notify/ntfy.ts";
import { topic } from "../domain/schema/index.ts";
import { validate } from "../domain/validate.ts";
import { pushAnswer } from "./answers.ts";
import { HttpError, invalid } from "./problem.ts";
import { json, type Route } from "./router.ts";

const priorities = { min: 1, low: 2, default: 3, high: 4, max: 5, urgent: 5 } as const;

const message = z
  .string()
  .refine((m) => Buffer.byteLength(m) <= 4096, "must be at most 4096 bytes (ntfy's message limit)");

const pushBody = z.strictObject({
  title: z.string().min(1).max(250).optional(),
  message: message.optional(),
  priority: z
    .union([z.int().min(1).max(5), z.enum(Object.keys(priorities) as [keyof typeof priorities])], {
      error: "must be 1 to 5 or one of min, low, default, high, max, urgent",
    })
    .optional(),
  tags: z.array(z.string().min(1).max(100)).max(20).optional(),
  click: z.url({ protocol: /^https?$/, error: "must be an http or https URL to open when the notification is tapped" }).max(2048).optional(),
});

export function pushRoutes(publisher: Publisher, version: string): Route[] {
  return [
    {
      path: "/push/topics/:topic",
      methods: {
        POST: {
          summary: "Publish a test notification to an ntfy topic through the configured ntfy server",
          operationId: "pushTestNotification",
          // It publishes to any topic of the daemon's ntfy server: the daemon's business, not a server's.
          scope: "admin",
          server: "none",
          body: { schema: pushBody, required: false, types: ["*/*"] },
          responses: {
            200: { description: "ntfy took it", schema: pushAnswer },
            400: { description: "A topic or body ntfy would refuse; every problem is listed in `errors`" },
            413: { description: "Body over 1 MiB" },
            502: { description: "ntfy failed or did not answer; its error is in `detail`" },
          },
          handle: async (req) => {
            const name = req.params.topic!;
            const errors = [];
            const topicOk = validate(topic, name);
            if (!topicOk.ok) errors.push({ path: "/topic", message: topicOk.errors[0]!.message });
            const body = await req.body();
            // A body that is not JSON is the message itself, whatever its type, as ntfy takes it.
            const isJson = body !== undefined && (body.type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(body.type));
            const input = body === undefined ? {} : isJson ? json(body) : { message: body.text };
            const parsed = validate(pushBody, input);
            if (!parsed.ok) errors.push(...parsed.errors);
            if (errors.length > 0 || !parsed.ok) throw invalid(errors, "the push request");
            const { title, message, priority, tags, click } = parsed.value;
            const result = await publisher.publish({
              topic: name,
              // Only the test message is titled so; a message of one's own goes as it was written.
              ...(title !== undefined ? { title } : message === undefined ? { title: "healthd test notification" } : {}),
              message: message ?? `This is a test notification from healthd ${version}. Notifications will arrive here.`,
              priority: typeof priority === "string" ? priorities[priority] : (priority ?? 3),
              tags: tags ?? (message === undefined ? ["healthd", "test"] : ["healthd"]),
              ...(click ? { click } : {}),
            });
            if (!result.ok) throw new HttpError(502, `the ntfy server did not take the message: ${result.error}`);
            return { status: 200, body: { id: result.id, time: new Date(result.time * 1000).toISOString(), topic: name } };
          },
        },
      },
    },
  ];
}
