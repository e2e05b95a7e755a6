import { Command } from "commander";
import { followEntries } from "../follow.ts";
import type { NamedEntry } from "../model.ts";
import { openForReading } from "./database.ts";
import { dbOption, parseTarget } from "./options.ts";

export function tailCommand(): Command {
  return new Command("tail")
    .description("follow new results as the running daemon stores them")
    .argument("[target]", "SERVER or SERVER/SERVICE (all when left out)")
    .addOption(dbOption())
    .option("--json", "one JSON line per new entry (also when stdout is not a terminal)")
    .addHelpText(
      "after",
      `
On a terminal: a live table of services (q quits). Otherwise, or with --json, one JSON line per entry,
flushed as it comes. Reads the daemon's database beside it, without blocking it.

Examples:
  healthd tail
  healthd tail web-01 --json | jq 'select(.ok == false)'`,
    )
    .action(async (target: string | undefined, flags: { db: string; json?: boolean }) => {
      const { serverId, serviceId } = parseTarget(target);
      const store = await openForReading(flags.db);
      const after = await store.lastEntryId();
      const subscribe = (onEntries: (entries: readonly NamedEntry[]) => void) =>
        followEntries(store, after, { serverId, serviceId, onEntries });
      try {
        if (flags.json || !process.stdout.isTTY || !process.stdin.isTTY) {
          const stop = subscribe((entries) => {
            for (const entry of entries) process.stdout.write(JSON.stringify(entry) + "\n");
          });
          await new Promise<void>((resolve) => {
            process.once("SIGINT", resolve);
            process.once("SIGTERM", resolve);
            process.stdout.once("error", () => resolve()); // the reader went away (| head)
          });
          stop();
        } else {
          // Loaded only here: ink and React are most of what the other commands would otherwise pay to start.
          const [{ render }, { createElement }, { TailView }] = await Promise.all([
            import("ink"),
            import("react"),
            import("./tail-view.tsx"),
          ]);
          await render(createElement(TailView, { subscribe })).waitUntilExit();
        }
      } finally {
        await store.close();
      }
    });
}
