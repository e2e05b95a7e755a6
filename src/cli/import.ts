/**
 * `healthd import --from uptime-kuma|gatus|healthchecks FILE`: print another tool's monitors as a servers
 * document (YAML), and on stderr what could not be carried over and why; with --apply, apply it as
 * `healthd apply` would.
 */
import { Command, Option } from "commander";
import { UsageError } from "../platform/config.ts";
import { id } from "../domain/schema/index.ts";
import { projectPingKey } from "../import/healthchecks.ts";
import { importFile, isSqlite, NotThatFormat, sources, type Source } from "../import/index.ts";
import { applyText } from "./apply.ts";
import { keepTokens } from "./import-tokens.ts";
import { readInputFile, refuseTooDeep } from "./input.ts";
import { argument, dbOption } from "./options.ts";

interface Flags {
  readonly from: Source;
  readonly server?: string;
  readonly apply?: boolean;
  readonly dryRun?: boolean;
  readonly db: string;
  readonly pingKey?: string;
  readonly keepTokens?: boolean;
}

const defaultServers: Record<Source, string> = { "uptime-kuma": "uptime-kuma", gatus: "gatus", healthchecks: "healthchecks" };

export function importCommand(): Command {
  return new Command("import")
    .description("carry monitors over from Uptime Kuma, Gatus or Healthchecks.io: prints a servers file")
    .argument("<file>", "kuma.db or a Kuma JSON backup; Gatus's config.yaml; the JSON of Healthchecks.io's GET /api/v3/checks/")
    .addOption(new Option("--from <tool>", "what the file is from").choices(sources).makeOptionMandatory())
    .addOption(
      new Option("--server <id>", "the server of monitors outside any group (default: the tool's name)").argParser(
        argument((text: string) => {
          if (!id.safeParse(text).success) throw new UsageError(`--server must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got ${JSON.stringify(text)})`);
          return text;
        }),
      ),
    )
    .addOption(
      new Option("--ping-key <key>", "with --from healthchecks: the project's ping key, so that its slug URLs (/ping/KEY/SLUG) keep working").argParser(
        argument((text: string) => {
          if (!projectPingKey.test(text)) {
            throw new UsageError(`--ping-key must be the project's ping key from Healthchecks.io (its Settings, "Ping key"): 22 characters of A-Z a-z 0-9 _ - (got ${JSON.stringify(text)})`);
          }
          return text;
        }),
      ),
    )
    .option("--keep-tokens", "with --from gatus --apply: keep each external endpoint's token as a healthd ping token (the first token closes an open API)")
    .option("--apply", "apply it to the database now, as healthd apply does")
    .option("--dry-run", "with --apply: show what would change, change nothing")
    .addOption(dbOption())
    .addHelpText(
      "after",
      `
Groups (Kuma's group monitors, Gatus's group) become servers. What cannot be carried over (a kind of check
healthd does not have, a condition it cannot express) is listed on stderr, one line each.

Examples:
  healthd import --from uptime-kuma /var/lib/uptime-kuma/kuma.db > servers.yaml
  healthd import --from gatus config.yaml --apply [--keep-tokens]
  curl -H "X-Api-Key: $KEY" https://healthchecks.io/api/v3/checks/ > hc.json && healthd import --from healthchecks hc.json
  healthd import --from healthchecks hc.json --ping-key <the project's ping key> --apply   (slug URLs too)`,
    )
    .action(async (file: string, flags: Flags) => {
      if (flags.dryRun && !flags.apply) throw new UsageError("--dry-run goes with --apply (without --apply nothing is changed anyway)");
      if (flags.keepTokens && (flags.from !== "gatus" || !flags.apply || flags.dryRun)) {
        throw new UsageError("--keep-tokens goes with --from gatus and --apply (without --dry-run): the tokens are written to the database, never printed");
      }
      if (flags.pingKey !== undefined && flags.from !== "healthchecks") {
        throw new UsageError(`--ping-key goes with --from healthchecks (a Healthchecks.io project's ping key); ${flags.from} has no such key, leave it out`);
      }
      const bytes = readInputFile(file, { sqlite: flags.from === "uptime-kuma" });
      if (!isSqlite(bytes)) refuseTooDeep(bytes.toString("utf8"), file);
      let result;
      try {
        result = importFile(flags.from, file, bytes, flags.server ?? defaultServers[flags.from], { pingKey: flags.pingKey }, { keepTokens: flags.keepTokens ?? false });
      } catch (error) {
        if (error instanceof NotThatFormat) throw new UsageError(`${file} is not what --from ${flags.from} reads: ${error.message}`);
        throw error;
      }
      for (const line of result.imported.notes) process.stderr.write(`healthd: not carried over: ${line}\n`);
      const count = Object.values(result.imported.servers).reduce((n, s) => n + s.services.length, 0);
      const servers = Object.keys(result.imported.servers).length;
      process.stderr.write(`healthd: ${count} service${count === 1 ? "" : "s"} on ${servers} server${servers === 1 ? "" : "s"} carried over from ${file}\n`);
      if (!flags.apply) {
        process.stdout.write(result.yaml);
        return;
      }
      await applyText(result.yaml, `${file} (imported)`, { db: flags.db, dryRun: flags.dryRun ?? false });
      if (flags.keepTokens) await keepTokens(flags.db, result.imported.tokens ?? [], (line) => process.stderr.write(`healthd: ${line}\n`));
    });
}
