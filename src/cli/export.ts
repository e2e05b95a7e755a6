import { Command } from "commander";
import { renderServersFile } from "../servers-file.ts";
import { openForReading } from "./database.ts";
import { dbOption } from "./options.ts";

export function exportCommand(): Command {
  return new Command("export")
    .description("print every server as a file that healthd apply reads back (YAML, or JSON with --json)")
    .addOption(dbOption())
    .option("--json", "JSON instead of YAML")
    .addHelpText("after", "\nExamples:\n  healthd export > servers.yaml\n  healthd export --json | jq 'keys'")
    .action(async (flags: { db: string; json?: boolean }) => {
      const store = await openForReading(flags.db);
      try {
        const services = await store.services();
        const servers = (await store.servers()).map((server) => ({ ...server, services: services.filter((s) => s.serverId === server.id) }));
        process.stdout.write(renderServersFile(servers, flags.json ? "json" : "yaml"));
      } finally {
        await store.close();
      }
    });
}
