import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { copyDatabase, DestinationNotEmpty, type CopyProgress } from "../store/copy.ts";
import { openStore } from "../store/open.ts";
import { policy } from "../policy/index.ts";

export function copyCommand(): Command {
  return new Command("copy")
    .description("copy a whole database into a new, empty one (e.g. from SQLite to PostgreSQL)")
    .requiredOption("--from <db>", "the database to copy: a SQLite file or a postgres:// URL (only read)")
    .requiredOption("--to <db>", "where to: a new SQLite file or an empty PostgreSQL database (migrated first when needed)")
    .option("--json", "print the rows copied per table as JSON")
    .addHelpText(
      "after",
      `
Everything is copied (servers, services, states, entries, rollups, notifications) with its ids, table by
table, in one transaction of the destination: a copy that fails leaves it empty. A destination that already
holds data is refused (exit 2) and left alone. Stop the daemon first, or it goes on writing to the source.

Examples:
  healthd copy --from /var/lib/healthd/healthd.db --to postgres://healthd@db.example.org/healthd
  healthd copy --from postgres://healthd@db/healthd --to ./backup.db`,
    )
    .action(async (flags: { from: string; to: string; json?: boolean }) => {
      const open = async (target: string, mode: "read" | "write") => {
        try {
          return await openStore(target, { mode, policy });
        } catch (error) {
          throw new UsageError(`${mode === "read" ? "--from" : "--to"}: ${(error as Error).message}`, { cause: error });
        }
      };
      const from = await open(flags.from, "read");
      try {
        const to = await open(flags.to, "write");
        try {
          const progress = process.stderr.isTTY ? showProgress : undefined;
          const copied = await copyDatabase(from, to, { onProgress: progress });
          if (progress) process.stderr.write("\r\x1b[K");
          if (flags.json) process.stdout.write(JSON.stringify({ from: from.location, to: to.location, copied }) + "\n");
          else {
            for (const [table, rows] of Object.entries(copied)) process.stdout.write(`${table}: ${rows} ${rows === 1 ? "row" : "rows"}\n`);
            process.stdout.write(`copied ${from.location} to ${to.location}\n`);
          }
        } catch (error) {
          if (error instanceof DestinationNotEmpty) throw new UsageError(`${error.message}; nothing was written`, { cause: error });
          throw error;
        } finally {
          await to.close();
        }
      } finally {
        await from.close();
      }
    });
}

function showProgress({ table, copied, total }: CopyProgress): void {
  const percent = total === 0 ? 100 : Math.floor((copied / total) * 100);
  process.stderr.write(`\r\x1b[Kcopying ${table}: ${copied.toLocaleString("en")} of ${total.toLocaleString("en")} rows (${percent}%)`);
}
