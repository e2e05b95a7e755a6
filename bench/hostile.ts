/**
 * npm run bench:hostile — the daemon's memory while it checks hostile targets for a while: endless bodies,
 * one byte at a time, redirects forever, gzip bombs, broken encodings, resets, non-HTTP and non-TLS answers;
 * for tcp checks a banner that never ends and one dribbled a byte at a time; for dns checks a server that
 * never answers, one that answers garbage, and one whose UDP answers are truncated and whose TCP port says
 * nothing. Each check must end within its timeout, classified (the error kinds are printed).
 * RSS of the built executable from /proc: before the services exist, at its peak, and at the end.
 * Environment: SECONDS (60), COPIES (20 services per hostile kind, each checked every second).
 */
import { fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { listening, rssMb } from "./proc.ts";
import { fixed } from "./stats.ts";

const seconds = Number(process.env.SECONDS ?? 60);
const copies = Number(process.env.COPIES ?? 20);
const bin = fileURLToPath(new URL("../bin/healthd", import.meta.url));

const target = fork(new URL("./hostile-target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [ports] = (await once(target, "message")) as [Record<"http" | "notTls" | "endlessBanner" | "dribbleBanner" | "dnsSilent" | "dnsGarbage" | "dnsTruncated", number>];
const base = `http://127.0.0.1:${ports.http}`;
const http = (url: string) => ({ url, expect: [{ json: { path: "$.status", equals: "up" } }] });
const tcp = (port: number) => ({ type: "tcp", host: "127.0.0.1", port, expect: [{ banner: { contains: "220 ready" } }] });
const dns = (port: number) => ({ type: "dns", name: "www.example.test", server: `127.0.0.1:${port}` });
const kinds: Record<string, object> = {
  endless: http(`${base}/endless`),
  dribble: http(`${base}/dribble`),
  silent: http(`${base}/slow-headers`),
  "redirect-loop": http(`${base}/redirect-loop-a`),
  "redirect-forever": http(`${base}/hops/0`),
  "gzip-bomb": http(`${base}/gzip-bomb`),
  "bad-gzip": http(`${base}/bad-gzip`),
  "broken-json": http(`${base}/broken-json`),
  "invalid-utf8": http(`${base}/invalid-utf8`),
  reset: http(`${base}/reset`),
  garbage: http(`${base}/garbage`),
  "http10-no-length": http(`${base}/http10`),
  "not-tls": http(`https://127.0.0.1:${ports.notTls}/`),
  "tcp-endless-banner": tcp(ports.endlessBanner),
  "tcp-dribbled-banner": tcp(ports.dribbleBanner),
  "dns-silent": dns(ports.dnsSilent),
  "dns-garbage": dns(ports.dnsGarbage),
  "dns-truncated-tcp-silent": dns(ports.dnsTruncated),
};

const dir = mkdtempSync(join(tmpdir(), "healthd-bench-hostile-"));
const child = spawn(process.execPath, [bin, "serve", "--db", join(dir, "h.db"), "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
const url = await listening(child);
const pid = child.pid!;
await new Promise((r) => setTimeout(r, 1000));
const idle = rssMb(pid);
for (const [kind, check] of Object.entries(kinds)) {
  const services = Array.from({ length: copies }, (_, i) => ({
    id: `${kind}-${i}`,
    check: { ...check, intervalSeconds: 1, timeoutMs: 2000, notify: false },
  }));
  const answer = await fetch(`${url}/services/${kind}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services }) });
  if (answer.status !== 201) throw new Error(`PUT ${kind}: ${answer.status}`);
}
let peak = 0;
const samples: number[] = [];
const sampler = setInterval(() => {
  const rss = rssMb(pid);
  samples.push(rss);
  peak = Math.max(peak, rss);
}, 500);
await new Promise((r) => setTimeout(r, seconds * 1000));
clearInterval(sampler);
const metrics = await (await fetch(`${url}/metrics`)).text();
const byKind = [...metrics.matchAll(/^healthd_checks_total\{type="(\w+)",result="(\w+)",error_kind="([\w-]+)"\} (\d+)$/gm)].map((m) => `${m[1]} ${m[3]} ${m[4]}`);
const total = byKind.reduce((sum, line) => sum + Number(line.split(" ")[2]), 0);
const firstHalf = samples.slice(0, samples.length >> 1);
const secondHalf = samples.slice(samples.length >> 1);
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
console.log(`${Object.keys(kinds).length * copies} hostile services (${copies} of each of ${Object.keys(kinds).length} kinds), every second, for ${seconds} s: ${total} checks`);
console.log(`checks by error kind: ${byKind.join(", ")}`);
console.log(
  `RSS: ${fixed(idle)} MB idle, ${fixed(peak)} MB peak, ${fixed(samples.at(-1)!)} MB at the end; ` +
    `mean ${fixed(avg(firstHalf))} MB in the first half, ${fixed(avg(secondHalf))} MB in the second`,
);
child.kill("SIGTERM");
await once(child, "exit");
target.disconnect();
target.kill();
rmSync(dir, { recursive: true, force: true });
