/**
 * npm run bench:run — what `healthd run` costs a crontab line, beside the `curl` lines Healthchecks.io's docs
 * give for the same job, against one local healthd, in the same run, alternating, RUNS (21) times each after
 * WARMUP (2):
 *   true      the wrapped command alone (/bin/true): its own cost
 *   node      node -e 0: what any command written for node pays before its first line runs
 *   curl      curl -fsS -m 10 --retry 5 URL/start; /bin/true; curl -fsS -m 10 --retry 5 URL/$?
 *   healthd   node BIN run URL -- /bin/true   (BIN: dist/main.js, or another build)
 *   before    the same with BEFORE, when given: an older build's main.js, to compare in the same run
 * Each is timed by bash's `time` (wall, and the user + system time of every process it started, to the ms),
 * in the environment cron gives a job (PATH, HOME, SHELL, LOGNAME, LANG only); ENV=inherit keeps this shell's,
 * which can cost node itself dearly (NODE_EXTRA_CA_CERTS: node reads the file at every start, before any
 * line of healthd runs).
 * Prints the medians and healthd's cost over the command's own and over the curl lines: the contract asks
 * at most 150 ms of wall time and 100 ms of CPU over the wrapped command's own. Every ping of every run must be
 * stored (the bench counts the entries), so a run that stopped pinging cannot look fast.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serveHealthd } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 21);
const warmup = Number(process.env.WARMUP ?? 2);
const bin = process.env.BIN ?? fileURLToPath(new URL("../dist/main.js", import.meta.url));
const before = process.env.BEFORE;
const inherit = process.env.ENV === "inherit";
const cron = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: process.env.HOME ?? "/", SHELL: "/bin/sh", LOGNAME: process.env.LOGNAME ?? "root", LANG: "C.UTF-8" };
const env = inherit ? process.env : cron;
const trueBin = existsSync("/bin/true") ? "/bin/true" : "/usr/bin/true";

interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** One shell line timed by bash's `time` keyword: its children's rusage, to the millisecond. */
function timed(line: string): Timed {
  const ran = spawnSync("bash", ["-c", `TIMEFORMAT='%3R %3U %3S'; time { ${line} >/dev/null; }`], {
    encoding: "utf8",
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const report = /(\d+\.\d+) (\d+\.\d+) (\d+\.\d+)\s*$/.exec(ran.stderr);
  if (ran.status !== 0 || !report) throw new Error(`${line} failed (exit ${ran.status}): ${ran.stderr}`);
  const before = ran.stderr.slice(0, report.index).trim();
  if (before !== "") throw new Error(`${line} printed on stderr: ${before}`);
  const [wall, user, system] = report.slice(1).map(Number) as [number, number, number];
  return { wallMs: wall * 1000, cpuMs: (user + system) * 1000 };
}

const daemon = await serveHealthd(fileURLToPath(new URL("../bin/healthd", import.meta.url)));
try {
  const put = await fetch(`${daemon.url}/services/jobs`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ services: [{ id: "nightly", check: { type: "heartbeat", periodSeconds: 86_400 } }] }),
  });
  if (put.status !== 201) throw new Error(`PUT /services/jobs answered ${put.status}: ${await put.text()}`);
  const key = ((await put.json()) as { services: { check: { pingKey: string } }[] }).services[0]!.check.pingKey;
  const url = `${daemon.url}/ping/${key}`;
  const curl = "curl -fsS -m 10 --retry 5";
  const lines = {
    true: trueBin,
    node: `${process.execPath} -e 0`,
    curl: `${curl} ${url}/start; ${trueBin}; ${curl} ${url}/$?`,
    healthd: `${process.execPath} ${bin} run ${url} -- ${trueBin}`,
    ...(before ? { before: `${process.execPath} ${before} run ${url} -- ${trueBin}` } : {}),
  };
  type Line = keyof typeof lines;
  const results: Record<string, Timed[]> = Object.fromEntries(Object.keys(lines).map((name) => [name, []]));
  for (let run = 0; run < warmup + runs; run++) {
    for (const [name, line] of Object.entries(lines)) {
      const t = timed(line);
      if (run >= warmup) results[name]!.push(t);
    }
  }
  const entries = (await (await fetch(`${daemon.url}/services/jobs/nightly/data?limit=1000`)).json()) as { entries: unknown[] };
  const pinged = 2 * (Object.keys(lines).length - 2) * (warmup + runs);
  if (entries.entries.length !== pinged) throw new Error(`${pinged} pings sent, ${entries.entries.length} stored`);

  const m = (name: string, key: keyof Timed) => median(results[name]!.map((t) => t[key]));
  const row = (name: Line) => `${name.padEnd(8)} wall ${fixed(m(name, "wallMs")).padStart(7)} ms   cpu ${fixed(m(name, "cpuMs")).padStart(7)} ms   ${lines[name]}`;
  console.log(`${new Date().toISOString()}  node ${process.version}  median of ${runs} runs each, alternating, after ${warmup} warm-up; every ping stored; ${inherit ? "this shell's environment" : "cron's environment (PATH HOME SHELL LOGNAME LANG)"}`);
  for (const name of Object.keys(lines) as Line[]) console.log(row(name));
  const over = (name: string, base: string) => `wall ${fixed(m(name, "wallMs") - m(base, "wallMs"))} ms, cpu ${fixed(m(name, "cpuMs") - m(base, "cpuMs"))} ms`;
  for (const name of ["healthd", ...(before ? ["before"] : [])]) {
    console.log(`${name} over the command's own (true): ${over(name, "true")}   (contract: at most 150 ms wall, 100 ms cpu)`);
    console.log(`${name} over the two curl lines:      ${over(name, "curl")}`);
  }
} finally {
  await daemon.stop();
}
