/**
 * npm run bench:hostile — the daemon's memory while it checks hostile targets for a while: endless bodies,
 * one byte at a time, redirects forever, gzip bombs, broken encodings, resets, non-HTTP and non-TLS answers.
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
const [ports] = (await once(target, "message")) as [{ http: number; notTls: number }];
const base = `http://127.0.0.1:${ports.http}`;
const kinds: Record<string, string> = {
  endless: `${base}/endless`,
  dribble: `${base}/dribble`,
  silent: `${base}/slow-headers`,
  "redirect-loop": `${base}/redirect-loop-a`,
  "redirect-forever": `${base}/hops/0`,
  "gzip-bomb": `${base}/gzip-bomb`,
  "bad-gzip": `${base}/bad-gzip`,
  "broken-json": `${base}/broken-json`,
  "invalid-utf8": `${base}/invalid-utf8`,
  reset: `${base}/reset`,
  garbage: `${base}/garbage`,
  "http10-no-length": `${base}/http10`,
  "not-tls": `https://127.0.0.1:${ports.notTls}/`,
};

const dir = mkdtempSync(join(tmpdir(), "healthd-bench-hostile-"));
const child = spawn(process.execPath, [bin, "serve", "--db", join(dir, "h.db"), "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
const url = await listening(child);
const pid = child.pid!;
await new Promise((r) => setTimeout(r, 1000));
const idle = rssMb(pid);
for (const [kind, address] of Object.entries(kinds)) {
  const services = Array.from({ length: copies }, (_, i) => ({
    id: `${kind}-${i}`,
    check: { url: address, intervalSeconds: 1, timeoutMs: 2000, notify: false, expect: [{ json: { path: "$.status", equals: "up" } }] },
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
const byKind = [...metrics.matchAll(/^healthd_checks_total\{result="(\w+)",error_kind="(\w+)"\} (\d+)$/gm)].map((m) => `${m[2]} ${m[3]}`);
const total = byKind.reduce((sum, line) => sum + Number(line.split(" ")[1]), 0);
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
