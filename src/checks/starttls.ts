/**
 * The plain-text exchange each protocol has before its TLS handshake (STARTTLS): what the server says first,
 * what the client asks, what the server answers when it agrees. Each is the shortest exchange its RFC allows
 * (SMTP 3207, IMAP 2595, POP3 2595, FTP 4217, LDAP 4511; PostgreSQL's SSLRequest). A server that answers
 * anything else refuses: the check fails naming what it said.
 */
import type { Socket } from "node:net";
import type { TlsCheck } from "../domain/model.ts";
import { CheckFailure } from "./failure.ts";
import { quote } from "./expect.ts";

type Protocol = NonNullable<TlsCheck["starttls"]>;

/**
 * A line-based exchange, step by step: read until a whole line ends the server's reply (`ends`), which must be
 * the one the step wants (`agrees`), then send `send` (if any).
 */
type Step = { readonly ends: RegExp; readonly agrees: RegExp; readonly send?: string };

// SMTP's and FTP's replies end at the line whose code is followed by a space (220-... goes on).
const coded = /^\d{3} /m;
const lines: Record<Exclude<Protocol, "postgres" | "ldap">, readonly Step[]> = {
  smtp: [{ ends: coded, agrees: /^220 /m, send: "EHLO healthd\r\n" }, { ends: coded, agrees: /^250 /m, send: "STARTTLS\r\n" }, { ends: coded, agrees: /^220 /m }],
  imap: [{ ends: /^\* /m, agrees: /^\* OK/m, send: "a1 STARTTLS\r\n" }, { ends: /^a1 /m, agrees: /^a1 OK/m }],
  pop3: [{ ends: /^[+-]/m, agrees: /^\+OK/m, send: "STLS\r\n" }, { ends: /^[+-]/m, agrees: /^\+OK/m }],
  ftp: [{ ends: coded, agrees: /^220 /m, send: "AUTH TLS\r\n" }, { ends: coded, agrees: /^234 /m }],
};

/** PostgreSQL's SSLRequest: length 8, code 80877103. The server answers one byte: S (yes) or N (no). */
const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/** LDAP's StartTLS extended request (message 1, OID 1.3.6.1.4.1.1466.20037), BER-encoded. */
const startTlsOid = "1.3.6.1.4.1.1466.20037";
const ldapRequest = Buffer.concat([Buffer.from([0x30, 0x1d, 0x02, 0x01, 0x01, 0x77, 0x18, 0x80, 0x16]), Buffer.from(startTlsOid)]);

/** The most a server may say before it agrees: a greeting and an EHLO's list of extensions fit in it. */
const maxBytes = 16 * 1024;

/** Run `protocol`'s exchange on `socket`; resolves once the server agreed, so the handshake may start. */
export async function startTls(socket: Socket, protocol: Protocol, where: string): Promise<void> {
  const reader = new Reader(socket, where);
  try {
    if (protocol === "postgres") {
      socket.write(sslRequest);
      const answer = await reader.until((b) => b.length >= 1);
      if (answer[0] !== 0x53) throw refused(where, answer[0] === 0x4e ? "N (it does not offer TLS: ssl = off)" : quote(answer.toString("latin1")));
      return;
    }
    if (protocol === "ldap") {
      socket.write(ldapRequest);
      const answer = await reader.until(wholeBer);
      const code = ldapResultCode(answer);
      if (code !== 0) throw refused(where, code === null ? "an answer that is not an LDAP extended response" : `result code ${code}`);
      return;
    }
    for (const step of lines[protocol]) {
      const said = await reader.until((b) => wholeLines(b.toString("latin1"), step.ends));
      const text = said.toString("latin1");
      if (!wholeLines(text, step.agrees)) throw refused(where, quote(lastLine(text)));
      reader.clear();
      if (step.send !== undefined) socket.write(step.send);
    }
  } finally {
    reader.stop();
  }
}

const refused = (where: string, said: string) => new CheckFailure("tls", `${where} did not agree to STARTTLS: it answered ${said}`);

/** Whether a whole line of `text` (ended by CRLF or LF) matches `pattern`. */
function wholeLines(text: string, pattern: RegExp): boolean {
  return pattern.test(text.slice(0, text.lastIndexOf("\n") + 1));
}

const lastLine = (text: string) => text.trimEnd().split(/\r?\n/).at(-1) ?? "";

/** Whether `b` holds one whole BER element (a tag, a length in short or long form, that many bytes). */
function wholeBer(b: Buffer): boolean {
  if (b.length < 2) return false;
  const first = b[1]!;
  if (first < 0x80) return b.length >= 2 + first;
  const size = first & 0x7f;
  // 0x80 is BER's indefinite length, which LDAP never uses, and over 4 bytes is no length it sends: stop
  // reading, and the answer is judged not to be LDAP's.
  if (size === 0 || size > 4) return true;
  if (b.length < 2 + size) return false;
  return b.length >= 2 + size + b.readUIntBE(2, size);
}

/** The resultCode of an LDAP ExtendedResponse ([APPLICATION 24] holding ENUMERATED first), or null. */
function ldapResultCode(b: Buffer): number | null {
  const at = b.indexOf(0x78);
  if (at < 0) return null;
  const code = b.indexOf(Buffer.from([0x0a, 0x01]), at);
  return code < 0 || code + 2 >= b.length ? null : b[code + 2]!;
}

/** What the server sent so far, and a wait for enough of it. */
class Reader {
  #received = Buffer.alloc(0);
  #check: () => void = () => {};
  #failure: Error | undefined;
  readonly #onData = (chunk: Buffer) => {
    this.#received = Buffer.concat([this.#received, chunk]);
    this.#check();
  };
  readonly #onEnd = () => {
    this.#failure ??= new CheckFailure("tls", `${this.where} closed the connection before STARTTLS`);
    this.#check();
  };
  // A reset is said as what it is, at once, not as the deadline passing.
  readonly #onError = (error: Error) => {
    this.#failure ??= error;
    this.#check();
  };
  constructor(
    private readonly socket: Socket,
    private readonly where: string,
  ) {
    socket.on("data", this.#onData);
    socket.once("end", this.#onEnd);
    socket.once("close", this.#onEnd);
    socket.on("error", this.#onError);
  }

  until(enough: (received: Buffer) => boolean): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.#check = () => {
        if (enough(this.#received)) resolve(this.#received);
        else if (this.#failure || this.#received.length > maxBytes) reject(this.#failure ?? new CheckFailure("tls", `${this.where} said more than ${maxBytes} bytes before agreeing to STARTTLS`));
      };
      this.#check();
    });
  }

  clear(): void {
    this.#received = Buffer.alloc(0);
  }

  /** Hand the socket over to TLS: nothing more is read here. */
  stop(): void {
    this.socket.off("data", this.#onData);
    this.socket.off("end", this.#onEnd);
    this.socket.off("close", this.#onEnd);
    this.socket.off("error", this.#onError);
  }
}
