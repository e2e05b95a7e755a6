/**
 * A real SMTP server on 127.0.0.1 (smtp-server) that keeps every message it takes, with its headers read, for
 * tests of the email channel. Plain SMTP and no AUTH: the transport's own options are email.test.ts's business.
 */
import { EventEmitter } from "node:events";
import type { TestContext } from "node:test";
import { SMTPServer } from "smtp-server";

export interface Mail {
  readonly to: string[];
  readonly raw: string;
  /** The header named (lower case), unfolded; undefined when the message has none. */
  header(name: string): string | undefined;
}

export async function smtpServer(t: TestContext): Promise<{ port: number; mails: Mail[]; events: EventEmitter }> {
  const mails: Mail[] = [];
  const events = new EventEmitter();
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    hideSTARTTLS: true,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const head = raw.slice(0, raw.indexOf("\r\n\r\n")).replace(/\r\n[ \t]+/g, " ");
        const headers = new Map<string, string>();
        for (const line of head.split("\r\n")) {
          const colon = line.indexOf(":");
          if (colon > 0) headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
        }
        const mail: Mail = { to: session.envelope.rcptTo.map((r) => r.address), raw, header: (name) => headers.get(name.toLowerCase()) };
        mails.push(mail);
        callback();
        events.emit("mail", mail);
      });
    },
  });
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.server.address() as { port: number }).port, mails, events };
}

/** A MIME part's text, quoted-printable (or base64) undone. */
export function mimePart(raw: string, type: string): string {
  const start = raw.indexOf(`Content-Type: ${type}`);
  if (start < 0) throw new Error(`the mail has no ${type} part`);
  const headers = raw.slice(start, raw.indexOf("\r\n\r\n", start));
  const body = raw.slice(raw.indexOf("\r\n\r\n", start) + 4).split(/\r\n--/)[0]!;
  if (/Content-Transfer-Encoding: base64/i.test(headers)) return Buffer.from(body, "base64").toString("utf8");
  const text = body.replace(/=\r\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "=" && /^[0-9A-F]{2}$/.test(hex)) (bytes.push(parseInt(hex, 16)), (i += 2));
    else bytes.push(...Buffer.from(text[i]!, "utf8"));
  }
  return Buffer.from(bytes).toString("utf8");
}
