import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { migrateDatabase } from "../store/open.ts";
import { dbOption } from "./options.ts";

export function migrateCommand(): Command {
  return new Command("migrate")
    .description("create the database file if needed (SQLite) and apply pending migrations")
    .addOption(dbOption())
    .option("--json", "print the result as JSON")
    .addHelpText("after", "\nExamples:\n  healthd migrate --db /var/lib/healthd/healthd.db\n  healthd migrate --db postgres://healthd@db.example.org/healthd")
    .action(async (flags: { db: string; json?: boolean }) => {
      let result;
      try {
        result = await migrateDatabase(flags.db);
      } catch (error) {
        throw new UsageError((error as Error).message, { cause: error });
      }
      const { location, report } = result;
      if (!report.ok) throw new UsageError(`${report.error.message}; the database was left unchanged`, { cause: report.error });
      if (flags.json) {
        process.stdout.write(JSON.stringify({ db: location, applied: report.applied, current: report.current }) + "\n");
      } else if (report.applied.length === 0) {
        process.stdout.write(`${location} is up to date (${report.current})\n`);
      } else {
        for (const name of report.applied) process.stdout.write(`applied ${name}\n`);
        process.stdout.write(`${location} is now at ${report.current}\n`);
      }
    });
}
