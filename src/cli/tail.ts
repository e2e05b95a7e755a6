import { Command } from "commander";
import { systemClock } from "../platform/clock.ts";
import { followEntries } from "../runtime/follow.ts";
import { entryJson } from "../http/views.ts";
import { shown, upstreamRefs } from "../status/shown.ts";
import type { ConfigurationStore, NamedEntry } from "../store/store.ts";
import { openForReading } from "./database.ts";
import { dbOption } from "./options.ts";
import { colourWanted } from "./output.ts";
import type { Row } from "./tail-view.tsx";
import { parseTarget, selectTarget, type Target } from "./target.ts";

export function tailCommand(): Command {
  return new Command("tail")
    .description("follow new results as the running daemon stores them")
    .argument("[target]", "SERVER or SERVER/SERVICE (all when left out)")
    .addOption(dbOption())
    .option("--json", "one JSON line per new entry (also when stdout is not a terminal)")
    .addHelpText(
      "after",
      `
On a terminal: a live table of services, starting from their stored state (services that are down first;
q quits). Otherwise, or with --json, one JSON line per new entry, flushed as it comes. Reads the daemon's
database beside it, without blocking it. An unknown SERVER or SERVICE is exit 2.

Examples:
  healthd tail
  healthd tail web-01 --json | jq 'select(.ok == false)'`,
    )
    .action(async (target: string | undefined, flags: { db: string; json?: boolean }) => {
      const scope = parseTarget(target);
      const store = await openForReading(flags.db);
      try {
        if (scope.serverId) selectTarget(await store.scheduledServices(), scope);
        const after = await store.lastEntryId();
        const subscribe = (onEntries: (entries: readonly NamedEntry[]) => void) => followEntries(store, after, { ...scope, onEntries, clock: systemClock });
        // The table also takes each service as the daemon left it after the entries came (read in order, one
        // look at a time), so it says what the API says: slow as degraded, an incident down since its start.
        let reading = Promise.resolve();
        const follow = (onEntries: (entries: readonly NamedEntry[], stored?: readonly Row[]) => void) =>
          subscribe((entries) => {
            reading = reading.then(() => storedRows(store, scope).then((rows) => onEntries(entries, rows), () => onEntries(entries)));
          });
        if (flags.json || !process.stdout.isTTY || !process.stdin.isTTY) {
          const stop = subscribe((entries) => {
            for (const { server, service, ...entry } of entries) process.stdout.write(JSON.stringify({ server, service, ...entryJson(entry) }) + "\n");
          });
          await new Promise<void>((resolve) => {
            process.once("SIGINT", resolve);
            process.once("SIGTERM", resolve);
            process.stdout.once("error", () => resolve()); // the reader went away (| head)
          });
          stop();
        } else {
          // Loaded only here: ink and React are most of what the other commands would otherwise pay to start.
          const [{ render }, { createElement }, { TailView }] = await Promise.all([import("ink"), import("react"), import("./tail-view.tsx")]);
          const initial = await storedRows(store, scope);
          await render(createElement(TailView, { initial, subscribe: follow, colour: colourWanted(process.stdout) })).waitUntilExit();
        }
      } finally {
        await store.close();
      }
    });
}

/**
 * The services in scope as stored: the table starts from them rather than empty, and takes them again after
 * new entries. Slow is what the API calls degraded (status/shown.ts); an open incident is down since its
 * stored start (its first failed check).
 */
export async function storedRows(store: ConfigurationStore, scope: Target, now = systemClock.now()): Promise<Row[]> {
  const services = await store.services(scope);
  const upstream = await store.upstream(upstreamRefs(services));
  return services.map((s): Row => {
    const { serverId, id, state, lastEntry: last } = s;
    return {
      name: `${serverId}/${id}`,
      ok: state === null || state.status === "unknown" ? null : state.status === "up",
      slow: shown(s, upstream, now).status === "degraded",
      since: state?.incidentStartedAt ?? null,
      latencyMs: last?.latencyMs ?? null,
      consecutiveFailures: state?.consecutiveFailures ?? 0,
      lastAt: state?.lastCheckedAt ?? null,
      recent: last ? [last.ok ? last.latencyMs : -1] : [],
    };
  });
}
