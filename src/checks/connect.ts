/**
 * How a check opens its connection: a fresh one each time, plain or TLS, reading into one buffer that every
 * check's connection shares (the `onread` option of net, which tls takes too though @types/node does not say
 * so). Without it Node mallocs 64 KiB a read and shrinks it to what came, freed when a collection finds its
 * buffer dead: at 10,000 HTTP services malloc's heap was 96 to 105 MB against 76 to 80 with the shared buffer
 * (docs/benchmarks.md). One buffer serves all: each read is handed to its check synchronously, and the check
 * copies what it keeps before the next.
 */
import { connect as netConnect, isIP, type OnReadOpts, type Socket } from "node:net";
import { connect as tlsConnect, createSecureContext, type ConnectionOptions, type PeerCertificate, type SecureContext, type TLSSocket } from "node:tls";

const readBuffer = Buffer.allocUnsafe(64 * 1024);

export interface Target {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** Whether a TLS connection refuses a certificate it cannot verify. */
  readonly verifyTls: boolean;
  /** The protocols a TLS connection offers by ALPN (grpc's h2); none offered when left out. */
  readonly alpn?: readonly string[];
}

/**
 * A connection to `target` that hands each read to the reader `take()` answers at that moment: a view of the
 * shared buffer, valid only during the call. A reader may be chosen after the connection opens; until then
 * what arrives is dropped. A TLS connection names the host (SNI) unless it is an address.
 */
export function connect(target: Target, take: () => (view: Buffer) => void): Socket {
  const { host, port } = target;
  const onread: OnReadOpts = { buffer: readBuffer, callback: (bytes, buffer) => (take()((buffer as Buffer).subarray(0, bytes)), true) };
  if (!target.tls) return netConnect({ host, port, onread });
  return tlsConnect({ host, port, servername: isIP(host) ? undefined : host, rejectUnauthorized: target.verifyTls, secureContext: secureContext(null), onread, ...(target.alpn ? { ALPNProtocols: [...target.alpn] } : {}) } as ConnectionOptions);
}

/**
 * The secure context (OpenSSL's SSL_CTX: its versions, ciphers and roots) for a lowest TLS version, made once
 * and shared by every connection that asks for that version: tls.connect makes a new one for each connection
 * otherwise, 8 % of a tls check's CPU (profiled). Sharing it shares no more than that: the name to verify,
 * whether to refuse an unverified certificate, and sessions (none is offered unless asked for) stay each
 * connection's own.
 */
export function secureContext(minVersion: "TLSv1.2" | "TLSv1.3" | null): SecureContext {
  let context = contexts.get(minVersion);
  if (!context) contexts.set(minVersion, (context = createSecureContext(minVersion ? { minVersion } : {})));
  return context;
}
const contexts = new Map<string | null, SecureContext>();

/**
 * When a TLS connection's certificate expires (Unix ms). OpenSSL prints "Bad time value" for a date it cannot
 * read: no expiry then, rather than NaN, which PostgreSQL's bigint refuses.
 */
export function certExpiry(socket: TLSSocket): number | null {
  return expiryOf(socket.getPeerCertificate());
}

/** A certificate's expiry (Unix ms), as certExpiry, from one already asked for. */
export function expiryOf(cert: PeerCertificate | undefined): number | null {
  const validTo = Date.parse(cert?.valid_to ?? "");
  return Number.isFinite(validTo) ? validTo : null;
}
