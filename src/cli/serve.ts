import { Command, Option } from "commander";
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { defaults, parseHttpUrl, parseName, parsePort, parsePositiveInt, parseTopic, UsageError } from "../platform/config.ts";
import type { Bootstrap } from "../runtime/domain-expiry/rdap.ts";
import { createLogger } from "../platform/log.ts";
import { trustedProxies } from "../runtime/pinging.ts";
import { argument, dbOption, logOptions, type LogFlags } from "./options.ts";

interface ServeFlags extends LogFlags {
  readonly rdapBootstrap?: string;
  readonly db: string;
  readonly host: string;
  readonly port: number;
  readonly maxInFlight: number;
  readonly maxConnections: number;
  readonly ntfyUrl: string;
  readonly ntfyTopic?: string;
  readonly ntfyToken?: string;
  readonly ntfyUser?: string;
  readonly ntfyPassword?: string;
  readonly retentionDays: number;
  readonly rollupRetentionDays: number;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly allowNoToken?: boolean;
  readonly publicStatus?: boolean;
  readonly node?: string;
  readonly location: string;
  readonly leaseSeconds: number;
  readonly channel?: string[];
  readonly publicUrl?: string;
  readonly trustProxy?: string[];
}

export function serveCommand(): Command {
  const command = new Command("serve")
    .description("run the API and the scheduler until SIGINT or SIGTERM")
    .addOption(dbOption())
    .addOption(new Option("--host <address>", "address the API listens on").env("HEALTHD_HOST").default(defaults.host))
    .addOption(
      new Option("--port <number>", "port the API listens on (0: any free port)")
        .env("HEALTHD_PORT")
        .default(defaults.port)
        .argParser(argument(parsePort)),
    )
    .addOption(
      new Option("--max-in-flight <n>", "checks running at once, at most")
        .env("HEALTHD_MAX_IN_FLIGHT")
        .default(defaults.maxInFlight)
        .argParser(argument(parsePositiveInt("--max-in-flight", 100_000))),
    )
    .addOption(
      new Option("--max-connections <n>", "API connections open at once, at most (the rest are closed at once)")
        .env("HEALTHD_MAX_CONNECTIONS")
        .default(defaults.maxConnections)
        .argParser(argument(parsePositiveInt("--max-connections", 100_000))),
    )
    .addOption(new Option("--token <token>", "require Authorization: Bearer <token> on the API (all but GET /healthz)").env("HEALTHD_TOKEN"))
    .addOption(
      new Option("--token-file <path>", "read the token from a file (systemd: LoadCredential=, then $CREDENTIALS_DIRECTORY/token)").env(
        "HEALTHD_TOKEN_FILE",
      ),
    )
    .addOption(new Option("--allow-no-token", "listen on a non-loopback address without a token (not recommended)").env("HEALTHD_ALLOW_NO_TOKEN"))
    .addOption(
      new Option("--public-status", "/status, /status.json and /badges answer without the token (names, statuses, uptime and latency only)").env(
        "HEALTHD_PUBLIC_STATUS",
      ),
    )
    .addOption(
      new Option("--ntfy-url <url>", "ntfy server notifications go to")
        .env("HEALTHD_NTFY_URL")
        .default(defaults.ntfyUrl)
        .argParser(argument(parseHttpUrl("--ntfy-url"))),
    )
    .addOption(
      new Option("--channel <name>", "where notifications of services that name no channels go (repeat it, or comma-separate; default: ntfy)")
        .env("HEALTHD_CHANNELS")
        .argParser((text: string, previous: string[] | undefined) => [...(previous ?? []), ...text.split(",").map((n) => argument(parseName("--channel"))(n.trim()))]),
    )
    .addOption(
      new Option("--trust-proxy <cidr>", "a proxy in front of healthd whose X-Forwarded-For and X-Forwarded-Proto a ping's stored address and scheme come from (repeat it, or comma-separate; 10.0.0.0/8, 127.0.0.1)")
        .env("HEALTHD_TRUST_PROXY")
        .argParser((text: string, previous: string[] | undefined) => {
          const cidrs = text.split(",").map((c) => c.trim());
          for (const cidr of cidrs) argument((c: string) => trustedProxies([c]))(cidr);
          return [...(previous ?? []), ...cidrs];
        }),
    )
    .addOption(
      new Option("--public-url <url>", "where people reach this daemon, for the status page and acknowledgement links in notifications (https://status.example.org)")
        .env("HEALTHD_PUBLIC_URL")
        .argParser(argument(parseHttpUrl("--public-url"))),
    )
    .addOption(
      new Option("--ntfy-topic <topic>", "topic of services without notifyTopic (none: such notifications are kept unsent)")
        .env("HEALTHD_NTFY_TOPIC")
        .argParser(argument(parseTopic)),
    )
    .addOption(new Option("--ntfy-token <token>", "ntfy access token (tk_...), sent as Bearer").env("HEALTHD_NTFY_TOKEN"))
    .addOption(new Option("--ntfy-user <user>", "ntfy user, with --ntfy-password, when no token is given").env("HEALTHD_NTFY_USER"))
    .addOption(new Option("--ntfy-password <password>", "ntfy password").env("HEALTHD_NTFY_PASSWORD"))
    .addOption(
      new Option("--node <name>", "this node's name among the daemons sharing a PostgreSQL database (default: the host name)")
        .env("HEALTHD_NODE")
        .argParser(argument(parseName("--node"))),
    )
    .addOption(
      new Option("--location <name>", "where this node probes from; checks with locations run on nodes of each")
        .env("HEALTHD_LOCATION")
        .default(defaults.location)
        .argParser(argument(parseName("--location"))),
    )
    .addOption(
      new Option("--lease-seconds <s>", "a node not heard from for this long is dead; the others take over its checks")
        .env("HEALTHD_LEASE_SECONDS")
        .default(defaults.leaseSeconds)
        .argParser(argument(parsePositiveInt("--lease-seconds", 3600))),
    )
    .addOption(
      new Option("--retention-days <days>", "delete entries older than this")
        .env("HEALTHD_RETENTION_DAYS")
        .default(defaults.retentionDays)
        .argParser(argument(parsePositiveInt("--retention-days", 36_500))),
    )
    .addOption(
      new Option("--rdap-bootstrap <file>", "IANA's RDAP bootstrap file for domains (dns.json), in place of the one shipped with healthd").env(
        "HEALTHD_RDAP_BOOTSTRAP",
      ),
    )
    .addOption(
      new Option("--rollup-retention-days <days>", "delete hourly rollups older than this")
        .env("HEALTHD_ROLLUP_RETENTION_DAYS")
        .default(defaults.rollupRetentionDays)
        .argParser(argument(parsePositiveInt("--rollup-retention-days", 36_500))),
    )
    .addHelpText(
      "after",
      `
Examples:
  healthd serve                              # ./healthd.db, http://127.0.0.1:8080
  healthd serve --db /var/lib/healthd/healthd.db --port 9000
  healthd serve --ntfy-url https://ntfy.example.org --ntfy-topic ops-alerts
  healthd serve --channel slack-ops --channel pagerduty   # channels made with PUT /channels or apply
  healthd serve --db postgres://healthd@db/healthd --node web-1 --location eu-west   # one of several nodes
  HEALTHD_PORT=9000 healthd serve            # every flag also reads HEALTHD_*`,
    )
    .action(async (flags: ServeFlags) => {
      const log = createLogger({ level: flags.logLevel, json: flags.logJson });
      const token = readToken(flags);
      const rdapBootstrap = flags.rdapBootstrap === undefined ? undefined : await readRdapBootstrap(flags.rdapBootstrap);
      checkNtfyCredentials(flags);
      // Listen for the signals before starting: one that comes while the daemon starts (or just after it says
      // where it listens) would otherwise end the process on the spot, without a clean stop.
      const stopSignal = new Promise<string>((resolve) => {
        process.once("SIGINT", () => resolve("SIGINT"));
        process.once("SIGTERM", () => resolve("SIGTERM"));
      });
      tuneCollector();
      const { startDaemon } = await import("../daemon.ts"); // the daemon's modules load only for serve
      const daemon = await startDaemon({
        db: flags.db,
        host: flags.host,
        port: flags.port,
        maxInFlight: flags.maxInFlight,
        maxConnections: flags.maxConnections,
        retentionDays: flags.retentionDays,
        token,
        allowNoToken: flags.allowNoToken ?? false,
        publicStatus: flags.publicStatus ?? false,
        rollupRetentionDays: flags.rollupRetentionDays,
        node: flags.node,
        location: flags.location,
        leaseMs: flags.leaseSeconds * 1000,
        rdapBootstrap,
        channels: flags.channel,
        publicUrl: flags.publicUrl,
        trustProxy: flags.trustProxy,
        ntfy: {
          url: flags.ntfyUrl,
          topic: flags.ntfyTopic,
          token: flags.ntfyToken,
          user: flags.ntfyUser,
          password: flags.ntfyPassword,
        },
        log,
      });
      log.info("stopping", { signal: await stopSignal });
      await daemon.stop();
    });
  for (const option of logOptions()) command.addOption(option);
  return command;
}

/** Basic auth needs both halves, and is not given beside a token (which one would be meant?). */
function checkNtfyCredentials(flags: ServeFlags): void {
  const { ntfyUser: user, ntfyPassword: password, ntfyToken: token } = flags;
  if (user !== undefined && password === undefined) {
    throw new UsageError("--ntfy-user needs --ntfy-password (HEALTHD_NTFY_PASSWORD) too; or give an access token with --ntfy-token instead");
  }
  if (password !== undefined && user === undefined) throw new UsageError("--ntfy-password needs --ntfy-user (HEALTHD_NTFY_USER) too");
  if (token !== undefined && user !== undefined) {
    throw new UsageError("give ntfy either a token (--ntfy-token) or a user and password (--ntfy-user, --ntfy-password), not both");
  }
}

/** --rdap-bootstrap: IANA's format (https://data.iana.org/rdap/dns.json), checked whole before the daemon starts. */
async function readRdapBootstrap(file: string): Promise<Bootstrap> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new UsageError(`cannot read --rdap-bootstrap ${file}: ${e.code ?? e.message}; give IANA's dns.json (https://data.iana.org/rdap/dns.json)`);
  }
  const { readBootstrap } = await import("../runtime/domain-expiry/rdap.ts"); // the shipped file loads only for serve
  const read = readBootstrap(json);
  if (!read.ok) throw new UsageError(`--rdap-bootstrap ${file}: ${read.problem}; give IANA's dns.json (https://data.iana.org/rdap/dns.json)`);
  return read.bootstrap;
}

function readToken(flags: ServeFlags): string | undefined {
  if (flags.token !== undefined && flags.tokenFile !== undefined) {
    throw new UsageError("give the token once: --token (HEALTHD_TOKEN) or --token-file (HEALTHD_TOKEN_FILE), not both");
  }
  let token = flags.token;
  if (flags.tokenFile !== undefined) {
    try {
      token = readFileSync(flags.tokenFile, "utf8").replace(/\r?\n$/, "");
    } catch (error) {
      throw new UsageError(`cannot read --token-file ${flags.tokenFile}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
  }
  // What a client can send in a header: visible ASCII only (a control character or an accent never matches).
  if (token !== undefined && (token.length < 16 || !/^[\x21-\x7e]+$/.test(token))) {
    throw new UsageError(
      "the token must be at least 16 visible ASCII characters (letters, digits and punctuation; no spaces, control characters or accents), " +
        "for example: openssl rand -hex 32",
    );
  }
  return token;
}

/**
 * Four of V8's collector heuristics, set for a daemon before its code runs (V8 reads them as it goes, not
 * only at its start; a flag given to node on its command line wins). All are measured in docs/benchmarks.md.
 *
 * V8 decides, for each object literal in the code, to allocate its objects in the old generation once nearly
 * all of them outlive a scavenge, and does not go back. A check's objects all do whenever many checks are in
 * flight at once (a thousand services added together, a site that stops answering); from then on the
 * literals of every check, in the old generation, hold the rest of its objects (socket, reader, closures)
 * through each scavenge until a full collection: 5 kB promoted a check instead of 0.8, and an old generation
 * grown to match. `--no-allocation-site-pretenuring` turns that decision off.
 *
 * After a full collection V8 lets the old generation grow up to four times what survived before the next,
 * on a machine with memory to spare, and it grants that most after a burst (the first checks of 10,000 new
 * services): the heap grew from 47 to 193 MB before its next full collection, which found 65 MB alive.
 * Letting it grow by half, as Go's GOGC=50 does, keeps the daemon's memory steady (RSS at most 225 MB
 * against 315 at 10,000 services) for a full collection every 9 s there: CPU a check from 7 % more to 12 %
 * less in four alternating rounds, 3 % more in bench:checks beside the build before.
 *
 * A full collection marks the heap in one pause (`--no-incremental-marking`) rather than in steps between
 * the daemon's turns with helper threads marking beside it. That also stops V8's memory reducer, which
 * starts only through incremental marking: when the allocation rate looked low after a full collection it
 * ran another, which drops every map no live object has, and between two wake-ups no check's objects are
 * alive: the optimized code of a check's path was thrown away (21 functions at one such collection at 1,000
 * services) and compiled again over the next minute. Side by side at 1,000 services: 10 to 22 % less CPU a
 * check in eight pairs, most of it the reducer's part (`node --no-memory-reducer` alone: 9 and 20 % in two),
 * 4 % at 100 services, the same within the noise at 10,000; RSS 15 to 20 MB more at 1,000 services
 * (the reducer gave memory back). The price is the pause: 55 ms about every minute and a half at 1,000
 * services and 70 to 110 ms every 12 s at 10,000, against 5 to 16 ms (and steps of at most 8) before. Checks
 * in flight or due then wait for it, their latency included; at 10,000 services the start lag's p99 stayed
 * within 10 ms. Whoever prefers short pauses to CPU runs `node --incremental-marking "$(command -v healthd)"
 * serve`, where `--memory-reducer-single-gc` keeps the reducer to one collection a cycle (from minute 1 to
 * minute 6, one reducing collection at most instead of four to six, 7 to 19 % less CPU a check).
 */
function tuneCollector(): void {
  const given = new Set(process.execArgv.map(v8FlagName));
  const flags = ["--no-allocation-site-pretenuring", "--heap-growing-percent=50", "--no-incremental-marking", "--memory-reducer-single-gc"];
  for (const flag of flags) {
    if (!given.has(v8FlagName(flag))) setFlagsFromString(flag);
  }
}

/** A V8 flag's name as node's command line may spell it: `--no-x_y=1` is x-y. */
const v8FlagName = (arg: string) => arg.replace(/^--(no-)?|=.*$/g, "").replaceAll("_", "-");
