import { readFileSync } from "node:fs";
import { Command } from "commander";
import { applyServers } from "../apply.ts";
import { UsageError } from "../config.ts";
import { parseServersFile } from "../servers-file.ts";
import { openForWriting } from "./database.ts";
import { dbOption } from "./options.ts";

export function applyCommand(): Command {
  return new Command("apply")
    .description("create or replace every server of a YAML or JSON file, as PUT /services/{id} does")
    .argument("<file>", "servers keyed by id (- reads standard input)")
    .addOption(dbOption())
    .option("--dry-run", "show what would change, change nothing")
    .option("--prune", "delete stored servers that the file does not name")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      `
The file maps server ids to server documents (see GET /openapi.json):
  web-01:
    name: Web
    services:
      - id: homepage
        check: {url: "https://example.org/", intervalSeconds: 60}

A running daemon on the same database picks the change up within a few seconds.

Examples:
  healthd apply servers.yaml --dry-run
  healthd export > servers.yaml && healthd apply servers.yaml     # changes nothing
  healthd apply servers.yaml --prune`,
    )
    .action(async (file: string, flags: { db: string; dryRun?: boolean; prune?: boolean; json?: boolean }) => {
      let text: string;
      try {
        text = readFileSync(file === "-" ? 0 : file, "utf8");
      } catch (error) {
        throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
      const parsed = parseServersFile(text, file === "-" ? "<stdin>" : file);
      if (!parsed.ok) throw new UsageError(`${file} is invalid; nothing was applied:\n  ${parsed.errors.join("\n  ")}`);
      const store = await openForWriting(flags.db);
      try {
        const plan = applyServers(store, parsed.servers, { prune: flags.prune ?? false, dryRun: flags.dryRun ?? false });
        if (flags.json) {
          process.stdout.write(JSON.stringify({ dryRun: flags.dryRun ?? false, ...plan }) + "\n");
          return;
        }
        const verb = flags.dryRun ? "would be " : "";
        for (const [what, ids] of Object.entries(plan) as [string, string[]][]) {
          for (const serverId of ids) process.stdout.write(`${serverId}: ${verb}${what}\n`);
        }
        if (flags.dryRun) process.stdout.write("dry run: nothing was changed\n");
      } finally {
        await store.close();
      }
    });
}
