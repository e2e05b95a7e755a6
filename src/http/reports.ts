/** GET /reports: a month's figures per service, as JSON or CSV (src/status/report.ts). */
import { z } from "zod";
import { id } from "../domain/schema/index.ts";
import { monthPattern, monthSpan, monthlyReport, reportCsv } from "../status/report.ts";
import type { AlertingStore, ConfigurationStore, ReadModelStore } from "../store/store.ts";
import { permitServer } from "./access.ts";
import { reportAnswer } from "./answers.ts";
import { invalid } from "./problem.ts";
import type { Route } from "./router.ts";
import { noServer } from "./services.ts";

export interface ReportsContext {
  readonly store: AlertingStore & ConfigurationStore & ReadModelStore;
  readonly now: () => number;
}

export const reportQuery = z.strictObject({
  month: z.string().regex(monthPattern, "must be a month as YYYY-MM, for example 2026-10").describe("The calendar month (UTC), YYYY-MM"),
  server: id.optional().describe("Only this server's services"),
  format: z.enum(["json", "csv"], 'must be "json" or "csv"').default("json"),
});

export function reportRoutes(ctx: ReportsContext): Route[] {
  return [
    {
      path: "/reports",
      methods: {
        GET: {
          summary: "A month's uptime, incidents, downtime and latency per service, and whether each slaTarget was met",
          operationId: "getReport",
          server: "handler",
          query: reportQuery,
          responses: {
            200: { description: "The report; CSV (a row per service) with format=csv", schema: reportAnswer },
            400: { description: "Invalid input; every problem is listed in `errors`" },
            404: { description: "No such server" },
          },
          handle: async (req) => {
            const q = req.query as z.output<typeof reportQuery>;
            permitServer(await req.principal(), q.server, "GET /reports");
            const now = ctx.now();
            if (monthSpan(q.month).from > now) throw invalid([{ path: "/month", message: "has not begun yet; ask for this month or an earlier one" }], "the query");
            if (q.server !== undefined && (await ctx.store.servers(q.server)).length === 0) throw noServer(q.server);
            const report = await monthlyReport(ctx.store, q.month, now, q.server);
            if (q.format === "csv") {
              const name = `healthd-${q.month}${q.server ? `-${q.server}` : ""}.csv`;
              return { status: 200, text: reportCsv(report), headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${name}"` } };
            }
            return { status: 200, body: report };
          },
        },
      },
    },
  ];
}
