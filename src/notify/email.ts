/**
 * The email channel, through nodemailer (SMTP with implicit TLS, STARTTLS or neither, and AUTH): a plain-text
 * part and an HTML one, the subject naming the event, server and service. The Message-ID is made from the
 * notification (threading.ts), so a receiving system can tell a resend after a crash from a new message, and
 * an incident's DOWN, reminders and RECOVERED thread together.
 */
import nodemailer from "nodemailer";
import { threadHeaders } from "./threading.ts";
import type { ChannelDocument } from "../domain/schema/channel.ts";
import { texts, type Sender } from "./outgoing.ts";
import { render } from "../domain/template.ts";

type Email = Extract<ChannelDocument, { type: "email" }>;

const html = `<!doctype html><html><body style="font-family: sans-serif">
<h2 style="margin: 0 0 0.5em">{{title}}</h2>
<pre style="font: inherit; white-space: pre-wrap">{{message}}</pre>
{{#ackUrl}}<p><a href="{{ackUrl}}">Acknowledge</a> (stops reminders and escalations)</p>{{/ackUrl}}
{{#statusPage}}<p><a href="{{statusPage}}">Status page</a></p>{{/statusPage}}
<p style="color: #666; font-size: 0.85em">Sent by healthd at {{at}}.</p>
</body></html>`;

export function emailSender(doc: Email, timeoutMs: number): Sender {
  const port = doc.port ?? (doc.secure === "tls" ? 465 : doc.secure === "starttls" ? 587 : 25);
  const transport = nodemailer.createTransport({
    host: doc.host,
    port,
    secure: doc.secure === "tls",
    requireTLS: doc.secure === "starttls",
    ignoreTLS: doc.secure === "none",
    auth: doc.user === undefined ? undefined : { user: doc.user, pass: doc.password ?? "" },
    tls: { rejectUnauthorized: doc.verifyTls },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  return {
    async send(out) {
      const { title, message } = texts(doc, out);
      try {
        const info = await transport.sendMail({
          from: doc.from,
          to: doc.to,
          subject: title,
          text:
            message +
            (out.event.ackUrl ? `\n\nAcknowledge (stops reminders and escalations): ${out.event.ackUrl}` : "") +
            (out.event.statusPage ? `\n\nStatus page: ${out.event.statusPage}` : ""),
          html: render(html, { ...out.event, title, message }, "html"),
          ...threadHeaders(out.event, doc.from),
          headers: { "x-healthd-event": out.event.event },
        });
        return { ok: true, id: info.messageId };
      } catch (error) {
        const e = error as Error & { responseCode?: number; code?: string };
        // SMTP's 5xx is a refusal of this message (an address, the size); 4xx and lost connections may pass later.
        const permanent = e.responseCode !== undefined && e.responseCode >= 500 && e.code !== "EAUTH";
        const where = `${doc.host}:${port}`;
        return { ok: false, retryable: !permanent, status: e.responseCode ?? null, error: `email through ${where}: ${e.message}` };
      }
    },
    close: async () => transport.close(),
  };
}
