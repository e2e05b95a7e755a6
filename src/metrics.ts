/**
 * Prometheus metrics (text exposition 0.0.4 through prom-client, which also gives the standard process
 * metrics). Per-service series are read from the scheduler and the recorder when scraped, not kept current
 * on every check.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CheckResult } from "./model.ts";
import type { IncidentState } from "./notify/incident.ts";
import type { ScheduledService } from "./store/servers.ts";

export interface MetricSources {
  services(): readonly ScheduledService[];
  state(key: number): IncidentState | undefined;
  inFlight(): number;
  notifications(): Record<"pending" | "delivered" | "failed" | "unsent", number>;
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
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
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
    collect() {
      for (const [status, count] of Object.entries(sources.notifications())) this.set({ status }, count);
    },
  });
  const perService = (name: string, help: string, value: (state: IncidentState) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ["server", "service"] as const,
      registers,
      collect() {
        this.reset();
        for (const service of sources.services()) {
          const state = sources.state(service.key);
          const v = state && value(state);
          if (v !== undefined) this.set({ server: service.serverId, service: service.serviceId }, v);
        }
      },
    });
  perService("healthd_service_up", "1 when the service's last check passed, 0 when it failed (absent before its first check)", (s) =>
    s.status === "unknown" ? undefined : Number(s.status === "up"),
  );
  perService("healthd_service_consecutive_failures", "Failed checks in a row", (s) => s.consecutiveFailures);

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
  };
}
