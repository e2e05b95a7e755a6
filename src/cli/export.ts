import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { channelsKey, renderServersFile } from "./servers-file.ts";
import { openForReading } from "./database.ts";
import { dbOption } from "./options.ts";

export function exportCommand(): Command {
  return new Command("export")
    .description("print every channel and server as a file that healthd apply reads back (YAML, or JSON with --json)")
    .addOption(dbOption())
    .option("--json", "JSON instead of YAML")
    .addHelpText("after", "\nExamples:\n  healthd export > servers.yaml\n  healthd export --json | jq 'keys'")
    .action(async (flags: { db: string; json?: boolean }) => {
      const store = await openForReading(flags.db);
      try {
        const services = await store.services();
        const servers = (await store.servers()).map((server) => ({ ...server, services: services.filter((s) => s.serverId === server.id) }));
        const channels = await store.channels();
        if (servers.some((s) => s.id === channelsKey)) {
          throw new UsageError(`a server has the id ${channelsKey}, which a servers file keeps for channels; rename it (PUT it under another id) before exporting`);
        }
        process.stdout.write(renderServersFile(servers, channels, flags.json ? "json" : "yaml"));
      } finally {
        await store.close();
      }
    });
}
