/**
 * `healthd report --month 2026-10`: a month's figures per service from the database (src/status/report.ts),
 * as a table, as CSV for a spreadsheet, or as the JSON of GET /reports.
 */
import { Command } from "commander";
import { systemClock } from "../platform/clock.ts";
import { UsageError } from "../platform/config.ts";
import { monthPattern, monthSpan, monthlyReport, reportCsv, uptimePercent, type Report } from "../status/report.ts";
import { duration } from "../policy/message.ts";
import { openForReading, withStore } from "./database.ts";
import { dbOption } from "./options.ts";
import { table } from "./output.ts";

interface Flags {
  readonly db: string;
  readonly month?: string;
  readonly server?: string;
  readonly csv?: boolean;
  readonly json?: boolean;
}

export function reportCommand(): Command {
  return new Command("report")
    .description("a month's uptime, incidents, downtime and latency per service, and whether each slaTarget was met")
    .addOption(dbOption())
    .option("--month <YYYY-MM>", "the calendar month (UTC); default: last month")
    .option("--server <id>", "only this server's services")
    .option("--csv", "print CSV (a row per service, with a header)")
    .option("--json", "print the JSON of GET /reports")
    .addHelpText(
      "after",
      `
Checks made while a service was silenced or in maintenance are left out of its uptime, and that time
is left out of its downtime; the table's last column says how long that was.

Examples:
  healthd report --month 2026-10
  healthd report --month 2026-10 --csv > october.csv`,
    )
    .action(async (flags: Flags) => {
      if (flags.csv && flags.json) throw new UsageError("give --csv or --json, not both");
      const now = systemClock.now();
      const month = flags.month ?? lastMonth(now);
      if (!monthPattern.test(month)) throw new UsageError(`--month must be a month as YYYY-MM, for example 2026-10 (got ${JSON.stringify(month)})`);
      if (monthSpan(month).from > now) throw new UsageError(`--month ${month} has not begun yet; give this month or an earlier one`);
      const report = await withStore(openForReading(flags.db), async (store) => {
        if (flags.server !== undefined && (await store.servers(flags.server)).length === 0) throw new UsageError(`no server ${flags.server}; healthd export lists the servers`);
        return monthlyReport(store, month, now, flags.server);
      });
      process.stdout.write(flags.csv ? reportCsv(report) : flags.json ? JSON.stringify(report) + "\n" : text(report));
    });
}

function lastMonth(now: number): string {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
}

const pct = (uptime: number | null) => (uptime === null ? "no data" : `${uptimePercent(uptime)} %`);
const ms = (value: number | null) => (value === null ? "-" : `${Math.round(value)} ms`);

function text(report: Report): string {
  const head = `${report.month}${report.complete ? "" : ` (so far, until ${report.until})`}: ${report.services.length} service${report.services.length === 1 ? "" : "s"}\n`;
  if (report.services.length === 0) return head;
  const rows = report.services.map((s) => [
    `${s.server}/${s.service}`,
    pct(s.uptime),
    s.slaTarget === null ? "-" : `${s.slaTarget} % ${s.slaMet === null ? "(no data)" : s.slaMet ? "met" : "MISSED"}`,
    String(s.checks),
    String(s.failures),
    String(s.incidents),
    s.downtimeMs === 0 ? "0" : duration(s.downtimeMs),
    ms(s.latencyMs.p50),
    ms(s.latencyMs.p95),
    s.excluded.quietMs === 0 ? "-" : duration(s.excluded.quietMs),
  ]);
  return head + table([["SERVICE", "UPTIME", "SLA", "CHECKS", "FAILED", "INCIDENTS", "DOWNTIME", "P50", "P95", "LEFT OUT"], ...rows]) + `${report.note}\n`;
}
