/**
 * Prometheus metrics (text exposition 0.0.4 through prom-client, which also gives the standard process
 * metrics). Per-service series are written directly from the scheduler's and the recorder's state when
 * scraped: through prom-client's labelled gauges, 20,000 series took long enough to stall checks.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CheckResult, ScheduledService } from "./model.ts";
import type { IncidentState } from "./notify/incident.ts";
import type { NotificationStatus } from "./store/store.ts";

export interface MetricSources {
  services(): readonly ScheduledService[];
  state(key: number): IncidentState | undefined;
  inFlight(): number;
  notifications(): Promise<Record<NotificationStatus, number>>;
  storeWritable(): boolean;
}

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(sources: MetricSources) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const checks = new Counter({
    name: "healthd_checks_total",
    help: "Checks run, by result (ok, failed) and error kind (none when ok)",
    labelNames: ["result", "error_kind"] as const,
    registers,
  });
  const duration = new Histogram({
    name: "healthd_check_duration_seconds",
    help: "Total response time of checks, including failed ones",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const lag = new Histogram({
    name: "healthd_scheduler_lag_seconds",
    help: "How late checks start against their planned time",
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers,
  });
  const skipped = new Counter({
    name: "healthd_scheduler_skipped_runs_total",
    help: "Planned runs skipped because the service's previous run was still going",
    registers,
  });
  new Gauge({
    name: "healthd_checks_in_flight",
    help: "Checks running now",
    registers,
    collect() {
      this.set(sources.inFlight());
    },
  });
  new Gauge({
    name: "healthd_services_scheduled",
    help: "Services whose checks are scheduled",
    registers,
    collect() {
      this.set(sources.services().length);
    },
  });
  new Gauge({
    name: "healthd_notifications",
    help: "Notifications in the outbox by status: pending (to deliver), delivered, failed (refused by ntfy), unsent (no topic)",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      // While the database is away the last counts stand: /metrics must work most when the store does not.
      const counts = await sources.notifications().catch(() => undefined);
      for (const [status, count] of Object.entries(counts ?? {})) this.set({ status }, count);
    },
  });
  new Gauge({
    name: "healthd_store_writable",
    help: "1 while check results are being stored, 0 while the database refuses writes (disk full, read-only)",
    registers,
    collect() {
      this.set(sources.storeWritable() ? 1 : 0);
    },
  });
  const storeWriteFailures = new Counter({
    name: "healthd_store_write_failures_total",
    help: "Failed attempts to store a batch of check results (they are retried)",
    registers,
  });
  const resultsDropped = new Counter({
    name: "healthd_results_dropped_total",
    help: "Check results dropped because the store kept failing and the backlog was full",
    registers,
  });
  const shortages = new Counter({
    name: "healthd_check_shortages_total",
    help: "Checks that could not be made for want of the daemon's own resources (EMFILE, ENFILE, ENOMEM), by reason",
    labelNames: ["reason"] as const,
    registers,
  });
  const retentionBatches = new Histogram({
    name: "healthd_retention_batch_seconds",
    help: "How long each retention batch held the event loop",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers,
  });
  const retentionDeleted = new Counter({
    name: "healthd_retention_deleted_entries_total",
    help: "Entries deleted because they were older than --retention-days",
    registers,
  });

  return {
    registry,
    contentType: registry.contentType as string,
    /** The whole exposition: prom-client's metrics, then the per-service series. */
    async text(): Promise<string> {
      return (await registry.metrics()) + perServiceText(sources);
    },
    storeWriteFailed(): void {
      storeWriteFailures.inc();
    },
    resultsDropped(count: number): void {
      resultsDropped.inc(count);
    },
    retentionBatch(ms: number, deleted: number): void {
      retentionBatches.observe(ms / 1000);
      retentionDeleted.inc(deleted);
    },
    checked(result: CheckResult): void {
      checks.inc({ result: result.ok ? "ok" : "failed", error_kind: result.errorKind ?? "none" });
      duration.observe(result.latencyMs / 1000);
    },
    started(lagMs: number): void {
      lag.observe(Math.max(0, lagMs) / 1000);
    },
    skipped(): void {
      skipped.inc();
    },
    shortage(reason: string): void {
      shortages.inc({ reason });
    },
  };
}

const escape = (value: string) => value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

function perServiceText(sources: MetricSources): string {
  const up: string[] = [
    "# HELP healthd_service_up 1 when the service's last check passed, 0 when it failed (absent before its first check)",
    "# TYPE healthd_service_up gauge",
  ];
  const failures: string[] = [
    "# HELP healthd_service_consecutive_failures Failed checks in a row",
    "# TYPE healthd_service_consecutive_failures gauge",
  ];
  for (const service of sources.services()) {
    const state = sources.state(service.key);
    if (!state || state.status === "unknown") continue;
    const labels = `{server="${escape(service.serverId)}",service="${escape(service.serviceId)}"}`;
    up.push(`healthd_service_up${labels} ${state.status === "up" ? 1 : 0}`);
    failures.push(`healthd_service_consecutive_failures${labels} ${state.consecutiveFailures}`);
  }
  return up.join("\n") + "\n\n" + failures.join("\n") + "\n";
}
