/**
 * A login gate in front of the real PostgreSQL: it asks the client for a password the way a server does
 * (cleartext, md5 or SCRAM-SHA-256, over TLS when the client asks and the gate has a certificate), judges the
 * answer against PostgreSQL's own verifier of the role (pg_authid.rolpassword, made by the server), and on
 * success hands the connection to 127.0.0.1:5432, where the role logs in (trust) and the query runs. The
 * machine's PostgreSQL trusts every login on 127.0.0.1, so without the gate it never asks for a password.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { TLSSocket } from "node:tls";
import type { Cert } from "./certs.ts";

export interface GateOptions {
  readonly auth: "cleartext" | "md5" | "scram";
  /** Each role's rolpassword: "md5..." for cleartext and md5, "SCRAM-SHA-256$..." for scram. */
  readonly verifiers: Readonly<Record<string, string>>;
  /** Answers an SSLRequest with S and this certificate (N without). */
  readonly tls?: Cert;
  /**
   * A gate that does not know the password, after a right SCRAM proof: "signature" sends a wrong server
   * signature, "silent" none at all (straight to AuthenticationOk).
   */
  readonly lie?: "signature" | "silent";
}

export async function pgGate(t: { after(fn: () => unknown): void }, options: GateOptions): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    serve(socket, options, sockets).catch(() => socket.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return (server.address() as { port: number }).port;
}

/** Reads whole messages from a socket: `bytes(n)` waits for n of them. */
function reader(socket: Socket) {
  let buffered = Buffer.alloc(0);
  let wake: () => void = () => {};
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake();
  });
  const bytes = async (n: number): Promise<Buffer> => {
    while (buffered.length < n) {
      if (socket.destroyed) throw new Error("closed");
      await new Promise<void>((resolve) => (wake = resolve));
    }
    const taken = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return taken;
  };
  /**
   * A password or SASL message's body. Another message where PostgreSQL awaits one of those (a query a client
   * sent before it was asked for a password) ends the session as PostgreSQL's does, with its FATAL 08P01, and
   * this never resolves.
   */
  const message = async (): Promise<Buffer> => {
    const head = await bytes(5);
    if (head[0] !== 0x70) {
      socket.end(frame("E", Buffer.from(`SFATAL\0VFATAL\0C08P01\0Mexpected password response, got message type ${head[0]}\0\0`)));
      return new Promise<never>(() => {});
    }
    return bytes(head.readInt32BE(1) - 4);
  };
  return { bytes, message, rest: () => buffered };
}

const frame = (type: string, body: Buffer) => {
  const head = Buffer.alloc(5);
  head.write(type, 0, "latin1");
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
};
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const auth = (code: number, data: Buffer = Buffer.alloc(0)) => frame("R", Buffer.concat([int32(code), data]));
const refused = (user: string) => frame("E", Buffer.from(`SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user "${user}"\0\0`));
const hmac = (key: Buffer, text: string) => createHmac("sha256", key).update(text).digest();
const md5 = (data: string | Buffer) => createHash("md5").update(data).digest("hex");

async function serve(plain: Socket, options: GateOptions, sockets: Set<Socket>): Promise<void> {
  let socket = plain;
  let read = reader(socket);
  let length = (await read.bytes(4)).readInt32BE(0);
  let body = await read.bytes(length - 4);
  if (body.readInt32BE(0) === 80877103) {
    // SSLRequest: S and the handshake on the same socket, or N.
    if (!options.tls) plain.write("N");
    else {
      plain.removeAllListeners("data");
      plain.write("S");
      socket = new TLSSocket(plain, { isServer: true, key: options.tls.key, cert: options.tls.cert });
      socket.on("error", () => {});
      sockets.add(socket);
      read = reader(socket);
    }
    length = (await read.bytes(4)).readInt32BE(0);
    body = await read.bytes(length - 4);
  }
  const words = body.subarray(4).toString("utf8").split("\0");
  const startup: Record<string, string> = {};
  for (let i = 0; i + 1 < words.length && words[i] !== ""; i += 2) startup[words[i]!] = words[i + 1]!;
  const user = startup.user ?? "";
  const verifier = options.verifiers[user] ?? "";

  let right = false;
  if (options.auth === "cleartext") {
    socket.write(auth(3));
    const password = (await read.message()).toString("utf8").replace(/\0$/, "");
    right = verifier === `md5${md5(password + user)}`;
  } else if (options.auth === "md5") {
    const salt = randomBytes(4);
    socket.write(auth(5, salt));
    const answer = (await read.message()).toString("utf8").replace(/\0$/, "");
    right = answer === `md5${md5(Buffer.concat([Buffer.from(verifier.slice(3)), salt]))}`;
  } else {
    // SCRAM-SHA-256 (RFC 5802) against PostgreSQL's verifier: SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>.
    const [, iterations, salt, storedKey, serverKey] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier) ?? [];
    socket.write(auth(10, Buffer.from("SCRAM-SHA-256\0\0")));
    const initial = await read.message();
    const mechanismEnd = initial.indexOf(0);
    const clientFirst = initial.subarray(mechanismEnd + 5).toString("utf8");
    const clientFirstBare = clientFirst.replace(/^[^,]*,[^,]*,/, "");
    const nonce = /r=([^,]+)/.exec(clientFirstBare)![1]! + randomBytes(18).toString("base64");
    const serverFirst = `r=${nonce},s=${salt},i=${iterations}`;
    socket.write(auth(11, Buffer.from(serverFirst)));
    const clientFinal = (await read.message()).toString("utf8");
    const withoutProof = clientFinal.slice(0, clientFinal.lastIndexOf(",p="));
    const proof = Buffer.from(clientFinal.slice(clientFinal.lastIndexOf(",p=") + 3), "base64");
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = hmac(Buffer.from(storedKey ?? "", "base64"), authMessage);
    const clientKey = Buffer.from(proof.map((b, i) => b ^ (signature[i] ?? 0)));
    const stored = Buffer.from(storedKey ?? "", "base64");
    right = withoutProof.endsWith(`,r=${nonce}`) && proof.length === 32 && timingSafeEqual(createHash("sha256").update(clientKey).digest(), stored);
    if (right && options.lie !== "silent") {
      const serverSignature = options.lie === "signature" ? randomBytes(32) : hmac(Buffer.from(serverKey ?? "", "base64"), authMessage);
      socket.write(auth(12, Buffer.from(`v=${serverSignature.toString("base64")}`)));
    }
  }
  if (!right) {
    socket.end(refused(user));
    return;
  }
  // The real server from here: the role logs in (trust) and the client's query runs there.
  const real = connect({ host: "127.0.0.1", port: 5432 });
  real.on("error", () => socket.destroy());
  socket.on("close", () => real.destroy());
  real.on("close", () => socket.destroy());
  const params = Object.entries(startup).flatMap(([k, v]) => [k, v]).join("\0");
  real.write(Buffer.concat([int32(4 + 4 + Buffer.byteLength(params) + 2), int32(196608), Buffer.from(`${params}\0\0`)]));
  socket.removeAllListeners("data");
  if (read.rest().length > 0) real.write(read.rest());
  socket.pipe(real);
  real.pipe(socket);
}
