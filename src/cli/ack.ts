/**
 * `healthd ack SERVER/SERVICE [NOTE]`: acknowledge the service's open incident in the database, as `silence`
 * writes silences (a running daemon sends the `ack` notification and stops the reminders and escalations).
 * Exactly once, as through the API: an incident already acknowledged, or closed meanwhile, is refused.
 */
import { userInfo } from "node:os";
import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { systemClock } from "../platform/clock.ts";
import { incidentJson, iso } from "../http/views.ts";
import { openForWriting, withStore } from "./database.ts";
import { dbOption } from "./options.ts";
import { parseTarget } from "./target.ts";

export function ackCommand(): Command {
  return new Command("ack")
    .description("acknowledge a service's open incident: its channels are told, its reminders and escalations stop")
    .argument("<target>", "SERVER/SERVICE")
    .argument("[note]", "what you say (shown on the incident and in the ack notification)")
    .addOption(dbOption())
    .option("--json", "print the incident as JSON")
    .addHelpText("after", '\nExamples:\n  healthd ack web-01/db "restoring from backup"\n  healthd ack web-01/db --json')
    .action(async (target: string, note: string | undefined, flags: { db: string; json?: boolean }) => {
      const { serverId, serviceId } = parseTarget(target);
      if (serviceId === undefined) throw new UsageError(`give SERVER/SERVICE: an incident is a service's (got ${JSON.stringify(target)})`);
      if (note !== undefined && note.length > 1000) throw new UsageError(`the note is ${note.length} characters; at most 1000`);
      const by = `${whoRuns()} (healthd ack)`;
      const line = await withStore(openForWriting(flags.db), async (store) => {
        const found = await store.findService(serverId!, serviceId);
        if (found.key === undefined) throw new UsageError(found.serverExists ? `server ${serverId} has no service ${serviceId}` : `no server ${serverId}`);
        const open = await store.openIncident(serverId!, serviceId);
        if (!open) throw new UsageError(`${target} has no open incident: nothing to acknowledge (healthd check ${target} shows its state)`);
        const now = systemClock.now();
        const done = await store.acknowledge(open.id, { by, note: note ?? null, at: now });
        if (done.outcome === "acknowledged") return flags.json ? JSON.stringify(incidentJson(done.incident, now)) : `acknowledged ${target} (incident ${open.id}, down since ${iso(open.startedAt)})`;
        if (done.outcome === "already acknowledged") {
          const ack = done.incident.acknowledged!;
          throw new UsageError(`${target}'s incident was already acknowledged by ${ack.by} at ${iso(ack.at)}${ack.note ? `: ${ack.note}` : ""}`);
        }
        throw new UsageError(`${target}'s incident closed meanwhile: nothing to acknowledge`);
      });
      process.stdout.write(line + "\n");
    });
}

/** The user running the command, for `by`; a process with no passwd entry (some containers) is "someone". */
function whoRuns(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? "someone";
  }
}
