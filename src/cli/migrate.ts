import { Command } from "commander";
import { UsageError } from "../config.ts";
import { openStore } from "../store/db.ts";
import { migrate } from "../store/migrate.ts";
import { dbOption } from "./options.ts";

export function migrateCommand(): Command {
  return new Command("migrate")
    .description("create the database file if needed and apply pending migrations")
    .addOption(dbOption())
    .option("--json", "print the result as JSON")
    .addHelpText("after", "\nExamples:\n  healthd migrate --db /var/lib/healthd/healthd.db")
    .action(async (flags: { db: string; json?: boolean }) => {
      const store = openStore(flags.db);
      try {
        const report = await migrate(store);
        if (!report.ok) {
          throw new UsageError(`${report.error.message}; the database was left unchanged`, {
            cause: report.error,
          });
        }
        if (flags.json) {
          process.stdout.write(JSON.stringify({ db: flags.db, applied: report.applied, current: report.current }) + "\n");
        } else if (report.applied.length === 0) {
          process.stdout.write(`${flags.db} is up to date (${report.current})\n`);
        } else {
          for (const name of report.applied) process.stdout.write(`applied ${name}\n`);
          process.stdout.write(`${flags.db} is now at ${report.current}\n`);
        }
      } finally {
        await store.close();
      }
    });
}
