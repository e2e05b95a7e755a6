import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { parseServersFile } from "./servers-file.ts";
import { describeRefusal } from "../policy/dependencies.ts";
import { ChannelsRefused, DependenciesRefused, PingKeyTaken, SecretsMissing } from "../store/errors.ts";
import type { ServerChange } from "../store/store.ts";
import { openForWriting } from "./database.ts";
import { readInputFile, refuseTooDeep } from "./input.ts";
import { dbOption } from "./options.ts";
import { systemClock } from "../platform/clock.ts";

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
    .action(async (file: string, flags: ApplyFlags) => {
      const label = file === "-" ? "<stdin>" : file;
      const text = readInputFile(file, { stdin: true }).toString("utf8");
      refuseTooDeep(text, label);
      await applyText(text, label, flags);
    });
}

export interface ApplyFlags {
  readonly db: string;
  readonly dryRun?: boolean;
  readonly prune?: boolean;
  readonly json?: boolean;
}

/** Apply a servers document (`label` names it in errors), printing what changed: apply's and import's. */
export async function applyText(text: string, label: string, flags: ApplyFlags): Promise<void> {
  const parsed = parseServersFile(text, label, process.env);
  if (!parsed.ok) throw new UsageError(`${label} is invalid; nothing was applied:\n  ${parsed.errors.join("\n  ")}`);
  const store = await openForWriting(flags.db);
  try {
    const dryRun = flags.dryRun ?? false;
    // What the store refused whole, one located line per problem.
    const refused = (lines: readonly string[]) => new UsageError(`${label} cannot be applied; nothing was applied:\n  ${lines.join("\n  ")}`);
    let result;
    try {
      result = await store.applyServers(parsed.servers, { now: systemClock.now(), prune: flags.prune ?? false, dryRun, channels: parsed.channels });
    } catch (error) {
      if (error instanceof PingKeyTaken) {
        const [serverId, serviceId] = error.service.split("/") as [string, string | undefined];
        const position = parsed.servers.get(serverId)?.services.findIndex((s) => s.id === serviceId) ?? -1;
        // A server's own pingKey (its slug URLs') names no service.
        const path = serviceId === undefined ? `/${serverId}/pingKey` : `/${serverId}/services/${position}/check/${error.field}`;
        throw refused([`${parsed.where(path)}: ${path}: ${error.problem()}`]);
      }
      if (error instanceof SecretsMissing) {
        const located = error.paths.map((path) => `${parsed.where(`/channels/${error.channel}${path}`)}: /channels/${error.channel}${path}: is *** with no stored secret to keep; write the secret, or $\${NAME} to read it when a message is sent`);
        throw refused(located);
      }
      if (error instanceof ChannelsRefused) {
        const located = error.unknown.map((u) => {
          const position = u.serviceId === null ? -1 : (parsed.servers.get(u.serverId)?.services.findIndex((s) => s.id === u.serviceId) ?? -1);
          const field = u.field ?? "channels";
          const path = u.serviceId === null ? `/${u.serverId}/${field}` : `/${u.serverId}/services/${position}/check/${field}`;
          return `${parsed.where(path)}: ${path}: names ${u.channel}, which is not a channel; add it under channels: or fix the name`;
        });
        throw refused(located);
      }
      if (!(error instanceof DependenciesRefused)) throw error;
      // Where a service's reference sits in the file: under its server's id.
      const refusal = describeRefusal(error.problems, (service, index) => {
        const [serverId, serviceId] = service.split("/") as [string, string];
        const position = parsed.servers.get(serverId)?.services.findIndex((s) => s.id === serviceId) ?? -1;
        return position === -1 ? undefined : `/${serverId}/services/${position}/check/dependsOn/${index}`;
      });
      const located = refusal.errors.map((e) => `${parsed.where(e.path)}: ${e.path}: ${e.message}`);
      throw refused(located.length > 0 ? located : [refusal.detail]);
    }
    if (flags.json) {
      // Server ids by outcome (what scripts read first), then each server's changes service by service.
      const ids = (outcome: ServerChange["outcome"]) => result.servers.filter((s) => s.outcome === outcome).map((s) => s.serverId);
      const summary = { created: ids("created"), updated: ids("updated"), unchanged: ids("unchanged"), deleted: ids("deleted") };
      process.stdout.write(JSON.stringify({ dryRun, ...summary, servers: result.servers, channels: result.channels }) + "\n");
      return;
    }
    for (const change of result.channels) {
      if (change.outcome !== "unchanged") process.stdout.write(`channel ${change.name}: ${dryRun ? "would be " : ""}${change.outcome}\n`);
    }
    for (const change of result.servers) process.stdout.write(describe(change, dryRun));
    if (dryRun) process.stdout.write("dry run: nothing was changed\n");
  } finally {
    await store.close();
  }
}

/**
 * `web-01: created (2 services)`, or for a server that changed a line per service: + created,
 * ~ changed (with the fields that did; the server itself too: its name, its maintenance windows), - deleted.
 */
function describe(change: ServerChange, dryRun: boolean): string {
  const { created, updated, deleted } = change.services;
  const head = `${change.serverId}: ${dryRun ? "would be " : ""}${change.outcome}`;
  const count = (n: number) => ` (${n} service${n === 1 ? "" : "s"})`;
  if (change.outcome === "created") return head + count(created.length) + "\n";
  if (change.outcome === "deleted") return head + count(deleted.length) + "\n";
  const lines = [head];
  if (change.fields.length > 0) lines.push(`  ~ the server (${change.fields.join(", ")})`);
  for (const id of created) lines.push(`  + ${id}`);
  for (const { id, fields } of updated) lines.push(`  ~ ${id} (${fields.join(", ")})`);
  for (const id of deleted) lines.push(`  - ${id}`);
  return lines.join("\n") + "\n";
}
