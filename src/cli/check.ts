import { Command, Option } from "commander";
import { probe, type Probed } from "../checks/probe.ts";
import { systemClock } from "../platform/clock.ts";
import { parsePositiveInt, UsageError } from "../platform/config.ts";
import { isActive, targetOf, type Outcome, type ScheduledService } from "../domain/model.ts";
import { checkInput } from "../domain/schema/index.ts";
import { dueAt, shown } from "../status/shown.ts";
import type { ConfigurationStore, ResultStore } from "../store/store.ts";
import { validate } from "../domain/validate.ts";
import { exitCodes } from "./exit.ts";
import { openForReading } from "./database.ts";
import { argument, dbOption } from "./options.ts";
import { parseTarget, selectTarget } from "./target.ts";
import { colourWanted, paint } from "./output.ts";
import { adHocKind, type KindFlags } from "./check-kinds.ts";
import { kindOptions } from "./check-options.ts";
import { chosenKind, type AdHocKind } from "./check-flags.ts";
import { databaseAdHoc, type DatabaseFlags } from "./check-database.ts";

interface CheckFlags extends KindFlags, DatabaseFlags {
  readonly db: string;
  readonly url?: string;
  readonly method?: string;
  readonly header: string[];
  readonly expect?: string;
  readonly timeout?: number;
  readonly body?: string;
  readonly insecure?: boolean;
  /** --no-follow sets it false. */
  readonly follow: boolean;
  readonly json?: boolean;
  readonly record?: boolean;
  readonly concurrency: number;
}

interface Subject {
  readonly name: string;
  readonly check: Probed;
  readonly key?: number;
}

export function checkCommand(): Command {
  const command = new Command("check")
    .description("run checks once, now, and exit 1 if any failed")
    .argument("[target]", "SERVER or SERVER/SERVICE of the stored checks (all when left out)")
    .addOption(dbOption())
    .option("--url <url>", "run an ad-hoc check of this URL instead, without any database")
    .option("--method <method>", "ad-hoc --url: HTTP method (default GET)")
    .option("--header <name:value>", "ad-hoc --url, --websocket: a request header (repeatable)", (v: string, all: string[]) => [...all, v], [])
    .option("--expect <json>", 'ad-hoc: the expect list of the kind\'s check (one alternative alone is a list of one), e.g. \'[{"status": 200, "bodyContains": "ok"}]\'')
    .addOption(new Option("--timeout <ms>", "ad-hoc: timeout in ms (default 10000)").argParser(argument(parsePositiveInt("--timeout", 300_000))))
    .option("--body <text>", "ad-hoc --url: the request body (with --method POST, say)")
    .option("--insecure", "ad-hoc --url, --websocket, --grpc with --tls, --tls HOST:PORT: accept any TLS certificate (verifyTls false)")
    .option("--no-follow", "ad-hoc --url: do not follow redirects (followRedirects false)");
  for (const option of kindOptions()) command.addOption(option);
  command
    .option("--postgres <url>", "run an ad-hoc postgres check instead: postgres://user:${NAME}@host:port/database (the password from the environment)")
    .option("--mysql <url>", "run an ad-hoc mysql (or MariaDB) check instead: mysql://user:${NAME}@host:port/database")
    .option("--redis <url>", "run an ad-hoc redis check instead: redis://user:${NAME}@host:port/number (rediss:// for TLS)")
    .option("--query <text>", "ad-hoc with --postgres, --mysql, --redis: the query whose first row is judged (default SELECT 1, PING)")
    .option("--json", "one JSON object per result, one per line")
    .option("--record", "store the results as entries (stored checks only)")
    .addOption(
      new Option("--concurrency <n>", "checks at once").default(32).argParser(argument(parsePositiveInt("--concurrency", 1000))),
    )
    .addHelpText(
      "after",
      `
Exit codes: 0 all passed, 1 a check failed (or a heartbeat is late or down), 2 bad usage or unknown server,
3 internal error. A heartbeat is not checked but told: its state is printed.

Examples:
  healthd check                                  # every stored check
  healthd check web-01/homepage --json | jq .latencyMs
  healthd check --url https://example.org/ --expect '[{"status": 200, "bodyContains": "Example"}]'
  healthd check --url https://self-signed.internal/ --insecure --no-follow
  healthd check --url http://localhost:3000/api --method post --body '{"ping":1}' --header content-type:application/json
  healthd check --postgres 'postgres://healthd:\${HEALTHD_SECRET_PG}@db:5432/app' --query 'SELECT pg_is_in_recovery()' --expect '{"equals": "f"}'
  healthd check --redis redis://127.0.0.1:6379
  healthd check --websocket wss://example.org/socket --send ping --expect '{"contains": "pong"}'
  healthd check --grpc 127.0.0.1:50051 --service shop.Cart
  healthd check --grpc grpc.example.org:443 --tls  # gRPC over TLS (--tls with HOST:PORT is a tls check)
  healthd check --tls example.org:443 --expect '{"certValidDays": 14}'
  healthd check --tls mail.example.org:587 --starttls smtp
  healthd check --icmp 192.0.2.1 --count 5
  healthd check --tcp db.internal:5432
  healthd check --udp 127.0.0.1:9999 --send ping --expect '{"contains": "pong"}'
  healthd check --dns example.org --type MX --server 192.0.2.53
  if healthd check --url http://localhost:3000/health; then echo up; fi`,
    )
    .action(async (target: string | undefined, flags: CheckFlags) => {
      const kind = chosenKind(flags);
      if (kind !== undefined) {
        if (target) throw new UsageError(`give either a stored SERVER[/SERVICE] or --${kind}, not both`);
        if (flags.record) throw new UsageError(`--record stores results of stored checks; an ad-hoc --${kind} check has nowhere to go`);
        process.exitCode = await runAll([adHocSubject(kind, flags)], flags, async () => {});
        return;
      }
      const store = await openForReading(flags.db, { writable: flags.record ?? false });
      try {
        const services = await chosen(store, target);
        const active = services.flatMap((s) => (isActive(s.check) ? [{ name: `${s.serverId}/${s.serviceId}`, check: s.check, key: s.key }] : []));
        // --record goes the daemon's way: entry, state, rollup and notifications in one transaction.
        const record = flags.record ? (s: Subject, o: Outcome) => store.recordResults([{ serviceKey: s.key!, outcome: o }], systemClock.now()) : async () => {};
        const width = Math.max(0, ...services.map((s) => s.serverId.length + 1 + s.serviceId.length));
        const checked = await runAll(active, flags, record, services.length === active.length, width);
        const told = await heartbeats(store, services.filter((s) => !isActive(s.check)), flags, width);
        process.exitCode = Math.max(checked, told);
      } finally {
        await store.close();
      }
    });
  return command;
}

/**
 * The stored checks `target` names that are not paused. A paused one named alone, or a server whose services
 * are all paused, is a usage error saying so; paused ones among others are said on stderr and skipped.
 */
async function chosen(store: ConfigurationStore, target: string | undefined): Promise<ScheduledService[]> {
  const stored = (await store.services()).map((s) => ({ serverId: s.serverId, serviceId: s.id, key: s.key, paused: s.check.paused }));
  const named = selectTarget(stored, parseTarget(target));
  const paused = named.filter((s) => s.paused).map((s) => `${s.serverId}/${s.serviceId}`);
  if (target !== undefined && paused.length > 0 && paused.length === named.length) {
    throw new UsageError(
      named.length === 1
        ? `${paused[0]} is paused (paused: true), so it is not checked; unpause it to check it`
        : `every service of ${target} is paused (${paused.join(", ")}), so none is checked`,
    );
  }
  if (paused.length > 0) process.stderr.write(`healthd: skipped ${paused.length} paused: ${paused.join(", ")}\n`);
  const keys = new Set(named.filter((s) => !s.paused).map((s) => s.key));
  return (await store.scheduledServices()).filter((s) => keys.has(s.key));
}

function headersOf(flags: CheckFlags): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const header of flags.header) {
    const colon = header.indexOf(":");
    if (colon < 1) throw new UsageError(`--header must be name:value (got ${JSON.stringify(header)})`);
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  return headers;
}

function expectOf(flags: CheckFlags): unknown {
  if (flags.expect === undefined) return undefined;
  let expect: unknown;
  try {
    expect = JSON.parse(flags.expect);
  } catch (error) {
    throw new UsageError(`--expect is not JSON: ${(error as Error).message}`);
  }
  // One alternative may be given alone: '{"status": 200}' is '[{"status": 200}]'.
  return typeof expect === "object" && expect !== null && !Array.isArray(expect) ? [expect] : expect;
}

/** The one check an ad-hoc kind's flags describe. */
function adHocSubject(kind: AdHocKind, flags: CheckFlags): Subject {
  if (kind === "url") return adHoc(flags);
  if (kind === "postgres" || kind === "mysql" || kind === "redis") return databaseAdHoc(kind, flags[kind]!, flags.query, expectOf(flags), flags.timeout);
  return adHocKind(kind, flags, { headers: headersOf(flags), expect: expectOf(flags), timeoutMs: flags.timeout, insecure: flags.insecure });
}

function adHoc(flags: CheckFlags): Subject {
  const headers = headersOf(flags);
  const expect = expectOf(flags);
  const input = {
    url: flags.url,
    headers,
    // The same document a PUT takes, so the same rules (a method in any case, say) hold for both.
    method: flags.method,
    expect,
    timeoutMs: flags.timeout,
    body: flags.body,
    verifyTls: flags.insecure ? false : undefined,
    followRedirects: flags.follow ? undefined : false,
  };
  const parsed = validate(checkInput, Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
  if (!parsed.ok) throw new UsageError(parsed.errors.map((e) => `${flagOf(e.path)}: ${e.message}`).join("\n"));
  if (parsed.value.type !== "http") throw new UsageError("--url runs an http check");
  return { name: parsed.value.url, check: parsed.value };
}

/** Which flag an error of the ad-hoc check document is about. */
function flagOf(path: string): string {
  if (path.startsWith("/expect")) return `--expect ${path.slice("/expect".length) || "/"}`;
  if (path.startsWith("/headers")) return "--header";
  return ({ "/url": "--url", "/method": "--method", "/timeoutMs": "--timeout", "/body": "--body" } as Record<string, string>)[path] ?? path;
}

/** Heartbeats: their state as the status page shows it; late or down is a failure. */
async function heartbeats(store: ConfigurationStore & ResultStore, selected: readonly ScheduledService[], flags: CheckFlags, width: number): Promise<number> {
  if (selected.length === 0) return exitCodes.ok;
  const colour = colourWanted(process.stdout) && !flags.json;
  const now = systemClock.now();
  const keys = new Set(selected.map((s) => s.key));
  const services = (await store.services()).filter((s) => keys.has(s.key));
  const upstream = await store.upstream([]);
  let failed = 0;
  for (const s of services) {
    const { status } = shown(s, upstream, now);
    const bad = status === "late" || status === "down";
    if (bad) failed++;
    const state = s.state;
    const due = dueAt(s);
    const iso = (ms: number | null | undefined) => (ms == null ? null : new Date(ms).toISOString());
    if (flags.json) {
      process.stdout.write(
        JSON.stringify({ server: s.serverId, service: s.id, type: "heartbeat", status, lastPingAt: iso(state?.lastPingAt), nextDueAt: iso(due) }) + "\n",
      );
    } else {
      const mark = bad ? paint(status === "late" ? "LATE" : "DOWN", "red", colour) : paint(status === "up" ? "ok  " : status.padEnd(4), "green", colour);
      const last = state?.lastPingAt == null ? "never pinged" : `last ping ${iso(state.lastPingAt)}`;
      process.stdout.write(`${mark} ${`${s.serverId}/${s.id}`.padEnd(width)}  heartbeat: ${last}, ${status === "late" ? "was due" : "next due"} ${iso(due)}\n`);
    }
  }
  return failed > 0 ? exitCodes.checkFailed : exitCodes.ok;
}

/**
 * Check `subjects`, `flags.concurrency` at a time, and print each line in the subjects' order (a line waits for
 * the ones before it), names in a column `width` wide.
 */
async function runAll(
  subjects: Subject[],
  flags: CheckFlags,
  record: (s: Subject, o: Outcome) => Promise<unknown>,
  sayNone = true,
  width = Math.max(0, ...subjects.map((s) => s.name.length)),
): Promise<number> {
  const colour = colourWanted(process.stdout) && !flags.json;
  const progress = process.stderr.isTTY && subjects.length > 1;
  const lines: (string | undefined)[] = [];
  let printed = 0;
  let next = 0;
  let done = 0;
  let failed = 0;
  const worker = async () => {
    while (next < subjects.length) {
      const index = next++;
      const subject = subjects[index]!;
      const outcome = await probe(subject.check);
      await record(subject, outcome);
      done++;
      if (!outcome.ok) failed++;
      lines[index] = flags.json ? jsonLine(subject, outcome) : textLine(subject, outcome, colour, width);
      if (progress) process.stderr.write("\r\x1b[K");
      for (; lines[printed] !== undefined; printed++) process.stdout.write(lines[printed]!);
      if (progress && done < subjects.length) process.stderr.write(`checking ${done}/${subjects.length}...`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(flags.concurrency, subjects.length) }, worker));
  if (subjects.length === 0 && sayNone && !flags.json) process.stdout.write("no checks to run\n");
  return failed > 0 ? exitCodes.checkFailed : exitCodes.ok;
}

function jsonLine(subject: Subject, o: Outcome): string {
  const [server, service] = subject.key === undefined ? [null, null] : subject.name.split("/");
  return (
    JSON.stringify({
      server,
      service,
      type: subject.check.type,
      url: targetOf(subject.check),
      checkedAt: new Date(o.checkedAt).toISOString(),
      ok: o.ok,
      status: o.status,
      latencyMs: o.latencyMs,
      errorKind: o.errorKind,
      error: o.error,
      matched: o.matched,
      ...(o.answers === undefined ? {} : { answers: o.answers }),
    }) + "\n"
  );
}

function textLine(subject: Subject, o: Outcome, colour: boolean, width: number): string {
  const mark = o.ok ? paint("ok  ", "green", colour) : paint("FAIL", "red", colour);
  // What passed: an http status, a tcp connection, a udp answer, a dns check's answers (shown when it fails too).
  const answers = o.answers === undefined ? [] : [o.answers.length === 0 ? "(no answers)" : o.answers.join(", ")];
  const passed = o.status !== null ? `${o.status}` : subject.check.type === "tcp" ? "connected" : subject.check.type === "udp" ? "answered" : subject.check.type === "websocket" ? "open" : "";
  const detail = [o.ok ? passed : `${o.errorKind}: ${o.error}`, ...answers].filter((part) => part !== "").join("  ");
  return `${mark} ${subject.name.padEnd(width)}  ${o.latencyMs.toFixed(1).padStart(7)} ms  ${detail}\n`;
}
