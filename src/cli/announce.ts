/**
 * `healthd announce`: tell people something on the status pages, add updates to it and end it, in the
 * database like `silence` (a running daemon shows it within a second). The same schema as POST /announcements
 * checks what is given, and a problem is named by the flag that gave it.
 */
import { Command, Option } from "commander";
import { text } from "node:stream/consumers";
import { systemClock } from "../platform/clock.ts";
import { UsageError } from "../platform/config.ts";
import { announcementJson } from "../http/views.ts";
import { announcementBody, severities, updateBody } from "../domain/schema/announcement.ts";
import type { Announcement, AnnouncementStore } from "../store/store.ts";
import { validate, type FieldError } from "../domain/validate.ts";
import { openForWriting, withStore } from "./database.ts";
import { dbOption } from "./options.ts";
import { table } from "./output.ts";

interface Flags {
  readonly db: string;
  readonly message?: string;
  readonly severity?: string;
  readonly servers?: string;
  readonly starts?: string;
  readonly ends?: string;
  readonly update?: string;
  readonly end?: string;
  readonly delete?: string;
  readonly list?: boolean;
  readonly active?: boolean;
  readonly json?: boolean;
}

/** The flag that gave each field, for messages. */
const flagOf: Record<string, string> = { "/title": "TITLE", "/message": "--message", "/severity": "--severity", "/servers": "--servers", "/startsAt": "--starts", "/endsAt": "--ends" };

function parsed<T>(result: { ok: true; value: T } | { ok: false; errors: FieldError[] }): T {
  if (result.ok) return result.value;
  throw new UsageError(result.errors.map((e) => `${flagOf[e.path.replace(/\/\d+$/, "")] ?? e.path} ${e.message}`).join("; "));
}

export function announceCommand(): Command {
  return new Command("announce")
    .description("tell people something on the status pages; add updates to it; end it")
    .argument("[title]", "what is happening, in one line")
    .addOption(dbOption())
    .option("--message <text>", "Markdown: paragraphs, emphasis, links, lists (- reads it from stdin)")
    .addOption(new Option("--severity <level>", "how bad it is").choices(severities))
    .option("--servers <ids>", "the servers it concerns, comma-separated (default: all)")
    .option("--starts <time>", "show it from then (ISO 8601; default now)")
    .option("--ends <time>", "end it then (ISO 8601; default: when ended with --end)")
    .option("--update <id>", "add --message (and --severity) to announcement ID as an update")
    .option("--end <id>", "end announcement ID now (it moves to Past incidents)")
    .option("--delete <id>", "delete announcement ID (one made by mistake, or a scheduled one called off)")
    .option("--list", "list the announcements")
    .option("--active", "with --list: only those shown now")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      `
Examples:
  healthd announce "Checkout is slow" --severity degraded --servers web-01 --message "We are on it."
  healthd announce --update 3 --message "Fixed; we are watching it." --severity info
  healthd announce --end 3
  healthd announce "Database upgrade" --severity maintenance --starts 2026-12-01T02:00:00Z --ends 2026-12-01T03:00:00Z --message -  < notes.md
  healthd announce --list --active`,
    )
    .action(async (title: string | undefined, flags: Flags) => {
      const modes = [flags.list, flags.update !== undefined, flags.end !== undefined, flags.delete !== undefined, title !== undefined].filter(Boolean).length;
      if (modes !== 1) throw new UsageError("give a TITLE with --message, or --update ID, or --end ID, or --delete ID, or --list (one of them); see healthd announce --help");
      if ((title !== undefined || flags.update !== undefined) && flags.message === undefined) {
        throw new UsageError("--message is required: what people should know (Markdown; --message - reads it from stdin)");
      }
      const message = flags.message === "-" ? await text(process.stdin) : flags.message;
      await withStore(openForWriting(flags.db), async (store) => {
        const now = systemClock.now();
        if (flags.list) return list(store, now, flags);
        if (flags.delete !== undefined) {
          if (!(await store.deleteAnnouncement(idOf(flags.delete)))) throw noAnnouncement(flags.delete);
          return void process.stdout.write(flags.json ? "{}\n" : `deleted announcement ${flags.delete}\n`);
        }
        if (flags.end !== undefined) {
          const [before] = await store.announcements({ id: idOf(flags.end), now, limit: 1 });
          if (!before) throw noAnnouncement(flags.end);
          if (before.startsAt > now) throw new UsageError(`announcement ${flags.end} has not begun (it starts at ${new Date(before.startsAt).toISOString()}); --delete ${flags.end} calls it off`);
          const changed = await store.patchAnnouncement(before.id, { ended: true }, now);
          if (changed === undefined || "unknownServers" in changed) throw noAnnouncement(flags.end);
          return print(changed, now, flags, `ended announcement ${changed.id}`);
        }
        if (flags.update !== undefined) {
          const update = parsed(validate(updateBody, { message, ...(flags.severity ? { severity: flags.severity } : {}) }));
          const updated = await store.addAnnouncementUpdate(idOf(flags.update), update, now);
          if (updated === undefined) throw noAnnouncement(flags.update);
          if (updated === "full") throw new UsageError(`announcement ${flags.update} has as many updates as it may; end it (--end ${flags.update}) and announce anew`);
          return print(updated, now, flags, `updated announcement ${updated.id}`);
        }
        const doc = parsed(
          validate(announcementBody, {
            title,
            message,
            ...(flags.severity ? { severity: flags.severity } : {}),
            ...(flags.servers ? { servers: flags.servers.split(",").map((s) => s.trim()) } : {}),
            ...(flags.starts ? { startsAt: flags.starts } : {}),
            ...(flags.ends ? { endsAt: flags.ends } : {}),
          }),
        );
        const startsAt = doc.startsAt ?? now;
        if (doc.endsAt != null && doc.endsAt <= startsAt) throw new UsageError("--ends must be later than --starts (or than now, without --starts)");
        const added = await store.addAnnouncement({ ...doc, startsAt }, now);
        if ("unknownServers" in added) throw new UsageError(`--servers names ${added.unknownServers.join(", ")}, which do${added.unknownServers.length === 1 ? "es" : ""} not exist; healthd export lists the servers`);
        return print(added, now, flags, `announced ${added.id}: ${added.title}`);
      });
    });
}

const idOf = (text: string) => {
  if (!/^[0-9]{1,15}$/.test(text)) throw noAnnouncement(text);
  return Number(text);
};
const noAnnouncement = (id: string) => new UsageError(`no announcement ${JSON.stringify(id)}; healthd announce --list shows them`);

function print(a: Announcement, now: number, flags: Flags, words: string): void {
  process.stdout.write(flags.json ? JSON.stringify(announcementJson(a, now)) + "\n" : words + "\n");
}

async function list(store: AnnouncementStore, now: number, flags: Flags): Promise<void> {
  const all = (await store.announcements({ now, active: flags.active ? true : undefined, limit: 1000 })).map((a) => announcementJson(a, now));
  if (flags.json) return void process.stdout.write(JSON.stringify({ announcements: all }) + "\n");
  if (all.length === 0) return void process.stdout.write("no announcements\n");
  const rows = all.map((a) => [a.id, a.active ? "shown" : a.endsAt !== null && a.endsAt <= new Date(now).toISOString() ? "ended" : "scheduled", a.severity, a.startsAt, a.endsAt ?? "", a.servers?.join(",") ?? "all", a.title]);
  process.stdout.write(table([["ID", "STATE", "SEVERITY", "STARTS", "ENDS", "SERVERS", "TITLE"], ...rows]));
}
