/**
 * Acknowledging incidents: `POST /incidents/{id}/ack` with a token that may write (and, for a token limited to
 * some servers, only their incidents), and the notification's own signed link (notify/ack-link.ts), which needs
 * no token: the signature is its credential, and it names one incident. The link's GET only shows a page with a
 * button (mail scanners and chat previews fetch links); its POST, or ntfy's action (`?via=ntfy`), acknowledges.
 * Exactly once across nodes: the store's write is conditional (still open, not yet acknowledged).
 */
import { z } from "zod";
import { validAckSignature } from "../notify/ack-link.ts";
import { ackPagePolicy, renderAckForm, renderAckResult } from "../status/ack-page.ts";
import type { AckOutcome, Incident, RespondingStore } from "../store/store.ts";
import { mayUse } from "./access.ts";
import { incidentAnswer } from "./answers.ts";
import { HttpError } from "./problem.ts";
import { validBody, type Request, type Response, type Route } from "./router.ts";
import { badInput } from "./services.ts";
import { iso, incidentJson } from "./views.ts";

export interface AcknowledgeContext {
  readonly store: RespondingStore;
  readonly now: () => number;
  /** The cluster's secret that signs the links (every node takes the links any node made). */
  readonly ackSecret: string;
  /** Told of each acknowledgement made (the log says who; delivery looks at the outbox for its notification). */
  readonly acknowledged: (incident: Incident) => void;
}

export const ackBody = z.strictObject({
  note: z.string().max(1000, "must be at most 1000 characters").nullable().optional().describe("What the one who took it on says (shown on the incident and in the ack notification)"),
});

const incidentId = (text: string | undefined) => (text !== undefined && /^[0-9]{1,15}$/.test(text) ? Number(text) : undefined);
const notFound = (text: string | undefined) => new HttpError(404, `no incident ${JSON.stringify(text)}; GET /incidents lists them`);
const oneIncident = { 404: { description: "No such incident (or one of a server the token may not use)" } };

export function acknowledgeRoutes(ctx: AcknowledgeContext): Route[] {
  const { store } = ctx;
  /** The incident of the path, if the request's token may see it: another server's answers as one that does not exist. */
  const visible = async (req: Request): Promise<Incident> => {
    const id = incidentId(req.params.id);
    const incident = id === undefined ? undefined : await store.incident(id);
    if (!incident || !mayUse(await req.principal(), incident.serverId)) throw notFound(req.params.id);
    return incident;
  };
  return [
    {
      path: "/incidents/:id",
      methods: {
        GET: {
          summary: "One incident, with who acknowledged it",
          operationId: "getIncident",
          server: "handler",
          responses: { 200: { description: "The incident", schema: incidentAnswer }, ...oneIncident },
          handle: async (req) => ({ status: 200, body: incidentJson(await visible(req), ctx.now()) }),
        },
      },
    },
    {
      path: "/incidents/:id/ack",
      methods: {
        POST: {
          summary: "Acknowledge an open incident: its reminders and escalations stop (its RECOVERED still goes out), and its channels are told who is on it",
          operationId: "acknowledgeIncident",
          server: "handler",
          body: { schema: ackBody, required: false },
          responses: {
            200: { description: "Acknowledged: the incident", schema: incidentAnswer },
            400: badInput,
            ...oneIncident,
            409: { description: "Already acknowledged (the problem says by whom), or closed" },
            413: { description: "Body over 1 MiB" },
            415: { description: "Body is not JSON" },
          },
          handle: async (req) => {
            const incident = await visible(req);
            const body = (await req.json()) === undefined ? {} : await validBody(req, ackBody, "the acknowledgement", '{"note": "on it"}');
            const who = await req.principal();
            const done = await store.acknowledge(incident.id, { by: who.name, note: body.note ?? null, at: ctx.now() });
            if (done.outcome === "acknowledged") {
              ctx.acknowledged(done.incident);
              return { status: 200, body: incidentJson(done.incident, ctx.now()) };
            }
            throw new HttpError(409, ackRefusal(done));
          },
        },
      },
    },
    {
      path: "/incidents/:id/ack/:signature",
      methods: {
        GET: {
          summary: "The page of a notification's acknowledgement link: the incident and a button (a GET changes nothing)",
          operationId: "acknowledgementPage",
          open: true,
          responses: linkAnswers("The page, with the button that acknowledges"),
          handle: async (req) => {
            const checked = await linked(req);
            if ("answer" in checked) return checked.answer;
            const { incident } = checked;
            const subject = { server: incident.serverId, service: incident.serviceId, since: iso(incident.startedAt), error: incident.firstError };
            return htmlAnswer(200, renderAckForm(subject, `/incidents/${incident.id}/ack/${encodeURIComponent(req.params.signature!)}`));
          },
        },
        POST: {
          summary: "Acknowledge from a notification: the link's form, or ntfy's action button (?via=ntfy)",
          operationId: "acknowledgeByLink",
          open: true,
          query: z.strictObject({ via: z.enum(["ntfy"], 'must be "ntfy" (what the ntfy action adds) or absent').optional().describe("ntfy: the tap of ntfy's action button") }),
          body: { schema: z.strictObject({ note: z.string().max(1000).optional() }), required: false, types: ["application/x-www-form-urlencoded"] },
          responses: linkAnswers("Acknowledged"),
          handle: async (req) => {
            const checked = await linked(req);
            if ("answer" in checked) return checked.answer;
            const body = await req.body();
            const form = body?.type === "application/x-www-form-urlencoded" ? new URLSearchParams(body.text) : undefined;
            const note = form?.get("note")?.trim().slice(0, 1000) || null;
            const by = (req.query as { via?: "ntfy" }).via ?? "link";
            const done = await store.acknowledge(checked.incident.id, { by, note, at: ctx.now() });
            if (done.outcome !== "acknowledged") return refusedPage(done);
            ctx.acknowledged(done.incident);
            const name = `${done.incident.serverId}/${done.incident.serviceId}`;
            return htmlAnswer(200, renderAckResult(`Acknowledged ${name}`, "Its reminders and escalations stop, and its channels are told someone is on it. Its RECOVERED still comes."));
          },
        },
      },
    },
  ];

  /** The link's incident, or the page that says why the link does nothing: a bad signature (403), an incident over (410). */
  async function linked(req: Request): Promise<{ incident: Incident } | { answer: Response }> {
    const id = incidentId(req.params.id);
    const signature = req.params.signature ?? "";
    // The signature covers the incident's service, so the incident is read first (an id says nothing secret).
    const incident = id === undefined ? undefined : await store.incident(id);
    if (id !== undefined && !incident) return { answer: htmlAnswer(410, renderAckResult("This incident is gone", "Its service was deleted since the notification was sent; there is nothing left to acknowledge.")) };
    if (!incident || !validAckSignature(ctx.ackSecret, incident, signature)) {
      return { answer: htmlAnswer(403, renderAckResult("Not a link of this healthd", "This acknowledgement link is not signed by this healthd (mistyped, cut short, of another installation, or of a deleted service's incident). Open it again from the notification.")) };
    }
    if (incident.closedAt !== null) return { answer: refusedPage({ outcome: "closed", incident }) };
    if (incident.acknowledged) return { answer: refusedPage({ outcome: "already acknowledged", incident }) };
    return { incident };
  }
}

/** Why an acknowledgement was not made, in a sentence. */
/** Why an acknowledgement did nothing, in a sentence (the API's 409, the link's page, the console's form). */
export function ackRefusal(done: Exclude<AckOutcome, { outcome: "acknowledged" }>): string {
  if (done.outcome === "unknown") return "the incident no longer exists";
  const name = `${done.incident.serverId}/${done.incident.serviceId}`;
  if (done.outcome === "closed") return `the incident of ${name} closed at ${iso(done.incident.closedAt!)}: there is nothing to acknowledge`;
  const ack = done.incident.acknowledged!;
  return `the incident of ${name} was already acknowledged by ${ack.by} at ${iso(ack.at)}${ack.note ? ` (${ack.note})` : ""}`;
}

function refusedPage(done: Exclude<AckOutcome, { outcome: "acknowledged" }>): Response {
  if (done.outcome === "closed") return htmlAnswer(410, renderAckResult("This incident is over", `${capitalized(ackRefusal(done))}. The link works only while the incident is open.`));
  if (done.outcome === "unknown") return htmlAnswer(410, renderAckResult("This incident is gone", "There is nothing left to acknowledge."));
  return htmlAnswer(409, renderAckResult("Already acknowledged", `${capitalized(ackRefusal(done))}.`));
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function linkAnswers(ok: string) {
  return {
    200: { description: ok, contentType: "text/html" },
    403: { description: "The signature is not this healthd's for that incident", contentType: "text/html" },
    409: { description: "Already acknowledged (the page says by whom)", contentType: "text/html" },
    410: { description: "The incident is closed (or gone): the link works only while it is open", contentType: "text/html" },
  };
}

function htmlAnswer(status: number, text: string): Response {
  return {
    status,
    text,
    headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": ackPagePolicy, "cache-control": "no-store", "referrer-policy": "no-referrer", "x-content-type-options": "nosniff" },
  };
}
