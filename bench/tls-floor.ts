/**
 * npm run bench:tls-floor — what a fresh TLS connection costs Node itself, below anything healthd does: the CPU
 * of this process per connection for CONNECTIONS (2,000) connections, 20 at a time, to bench/kind-target.ts's
 * servers on 127.0.0.1, alternating in each of RUNS (5) runs:
 *  - plain: connect, send one HTTP/1.1 request, close at the first bytes of the answer (an http check's traffic);
 *  - tls: connect and make the TLS handshake (one shared secure context, no verification: the cheapest a tls
 *    check can be), close at once;
 * and the medians, with tls's surplus over plain; then OpenSSL's own C client (`openssl s_time -new`) making
 * handshakes with the same server for 5 s, its user CPU a handshake: what the handshake costs with no Node at
 * all. A tls check costs an http check's CPU plus at least that
 * surplus (it makes the handshake and skips the request), which is why bench:kinds cannot show tls within a
 * fraction of http's: docs/benchmarks/2026-12-06-kinds.md.
 */
import { execFileSync, fork } from "node:child_process";
import { once } from "node:events";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect, createSecureContext } from "node:tls";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 5);
const connections = Number(process.env.CONNECTIONS ?? 2000);
const parallel = 20;

const target = fork(new URL("./kind-target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [ports] = (await once(target, "message")) as [Record<string, number>];
const secureContext = createSecureContext({});
const request = Buffer.from("GET /svc-0 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");

const kinds: Record<string, () => Promise<void>> = {
  plain: () =>
    new Promise((resolve, reject) => {
      const socket = netConnect({ host: "127.0.0.1", port: ports.http! });
      socket.once("connect", () => socket.write(request));
      socket.once("data", () => (socket.destroy(), resolve()));
      socket.once("error", reject);
    }),
  tls: () =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port: ports.tls!, rejectUnauthorized: false, secureContext });
      socket.once("secureConnect", () => (socket.destroy(), resolve()));
      socket.once("error", reject);
    }),
};

/** ms of this process's CPU per connection of `kind`. */
async function measure(kind: string): Promise<number> {
  let left = connections;
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: parallel }, async () => { while (left-- > 0) await kinds[kind]!(); }));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / connections;
}

try {
  await measure("plain"); // warm both paths up before counting
  await measure("tls");
  const seen: Record<string, number[]> = { plain: [], tls: [] };
  for (let run = 0; run < runs; run++) for (const kind of run % 2 ? ["tls", "plain"] : ["plain", "tls"]) seen[kind]!.push(await measure(kind));
  const plain = median(seen.plain!);
  const tls = median(seen.tls!);
  console.log(`plain TCP + one HTTP request: ${fixed(plain, 3)} ms CPU a connection (median of ${runs})`);
  console.log(`TLS handshake alone:          ${fixed(tls, 3)} ms CPU a connection (median of ${runs}), ${fixed(tls / plain, 2)}x plain`);
  console.log(`a tls check's surplus over an http check, at least: ${fixed(tls - plain, 3)} ms`);
  // "3529 connections in 2.15s; 1641.40 connections/user sec": the user CPU only (the system's is not given).
  const timed = execFileSync("openssl", ["s_time", "-connect", `127.0.0.1:${ports.tls}`, "-new", "-time", "5"], { encoding: "utf8" });
  const perUserSecond = Number(/([\d.]+) connections\/user sec/.exec(timed)?.[1]);
  console.log(Number.isFinite(perUserSecond) ? `openssl s_time, no Node:      ${fixed(1000 / perUserSecond, 3)} ms user CPU a handshake` : `openssl s_time printed no "connections/user sec": ${timed.slice(-200)}`);
} finally {
  target.kill(); // also when a measure or openssl fails: the target process does not outlive the bench
}
