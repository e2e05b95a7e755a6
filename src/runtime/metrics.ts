/**
 * Prometheus metrics (text exposition 0.0.4 through prom-client, which also gives the standard process
 * metrics). Per-service series are written directly from the scheduler's services and what the daemon last
 * saw of each when scraped: through prom-client's labelled gauges, 20,000 series took long enough to stall
 * checks. The exposition passes `promtool check metrics` (a test runs it).
 */
import type { EventEmitter } from "node:events";
import type { RecordableHistogram } from "node:perf_hooks";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CheckingEvents, ServiceSeen } from "./checking.ts";
import type { IncidentState, ScheduledService } from "../domain/model.ts";
import type { NotificationStatus } from "../store/store.ts";


export interface MetricSources {
  /** How late the daemon's one-second tick fired each time (ns): the event loop's delay. */
  readonly loopDelays: RecordableHistogram;
  services(): readonly ScheduledService[];
  facts(key: number): ServiceSeen | undefined;
  inFlight(): number;
  notifications(): Promise<Record<NotificationStatus, number>>;
  storeWritable(): boolean;
  /** The live nodes sharing the database, as of the last heartbeat. */
  nodes(): readonly { readonly location: string }[];
  /** Ping keys whose rate this node keeps (known keys that pinged lately). */
  pingBuckets(): number;
}

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(sources: MetricSources, version: string) {
  const registry = new Registry();
  // prom-client samples event-loop delay with a timer of its own, by default every 10 ms: 100 wake-ups a second
  // that cost an idle daemon more than everything else it does. Node records the whole time between its timer's
  // calls, so at one a second its p50 read 1.0 s on an idle loop; and its wake-up came on top of the daemon's
  // own tick. So its timer is put off (once in 24 days) and the nodejs_eventloop_lag_* summaries are made here
  // from how late the tick fires; nodejs_eventloop_lag_seconds (measured afresh at each scrape) is prom-client's.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 2 ** 31 - 1 });
  const registers = [registry];
  loopDelayGauges(registry, sources.loopDelays);

  new Gauge({ name: "healthd_build_info", help: "1, labelled with the running version", labelNames: ["version"] as const, registers }).set({ version }, 1);

  const checks = new Counter({
    name: "healthd_checks_total",
    help: "Checks run, by kind of check (http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql, redis), result (ok, failed) and error kind (none when ok)",
    labelNames: ["type", "result", "error_kind"] as const,
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
    name: "healthd_node_services",
    help: "Checks this node runs (its share of the cluster's)",
    registers,
    collect() {
      this.set(sources.services().length);
    },
  });
  new Gauge({
    name: "healthd_cluster_nodes",
    help: "Live nodes sharing the database, by location",
    labelNames: ["location"] as const,
    registers,
    collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const node of sources.nodes()) counts.set(node.location, (counts.get(node.location) ?? 0) + 1);
      for (const [location, count] of counts) this.set({ location }, count);
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
    help: "Deliveries in the outbox (one per notification and channel) by status: pending (to deliver), delivered, failed (refused, or given up after 24 h), unsent (nowhere to go)",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      // While the database is away the last counts stand: /metrics must work most when the store does not.
      const counts = await sources.notifications().catch(() => undefined);
      for (const [status, count] of Object.entries(counts ?? {})) this.set({ status }, count);
    },
  });
  new Gauge({
    name: "healthd_ping_rate_keys",
    help: "Ping keys whose rate this node keeps: heartbeats' keys that pinged lately (an unknown key is never kept)",
    registers,
    collect() {
      this.set(sources.pingBuckets());
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
  const deliveries = new Counter({
    name: "healthd_notifications_total",
    help: "Delivery attempts by this node, by channel and outcome: delivered, retry (failed, tried again later), failed (refused), given_up (24 h of failures), unsent",
    labelNames: ["channel", "outcome"] as const,
    registers,
  });
  const storeWriteFailures = new Counter({
    name: "healthd_store_write_failures_total",
    help: "Failed attempts to store a batch of check results (they are retried)",
    registers,
  });
  // A slow disk or a distant database shows here first; on SQLite (synchronous) it is also how long each batch
  // held the event loop, which bench:phases reads as the write path's share of a check.
  const storeBatches = new Histogram({
    name: "healthd_store_batch_seconds",
    help: "How long storing each batch of check results took, from the call to the commit of its transaction",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers,
  });
  const storeBatchResults = new Counter({
    name: "healthd_store_batch_results_total",
    help: "Check results (and heartbeat pings and deadlines) stored in those batches",
    registers,
  });
  const resultsDropped = new Counter({
    name: "healthd_results_dropped_total",
    help: "Check results dropped: the store kept failing and the backlog was full, or the store refused the result itself",
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
      return withoutTotalGauges(await registry.metrics()) + perServiceText(sources);
    },
    /** Count what the checks tell. */
    observe(events: EventEmitter<CheckingEvents>): void {
      events.on("check:started", (_service, lagMs) => lag.observe(Math.max(0, lagMs) / 1000));
      events.on("check:skipped", () => skipped.inc());
      events.on("check:finished", (service, result) => {
        checks.inc({ type: service.check.type, result: result.ok ? "ok" : "failed", error_kind: result.errorKind ?? "none" });
        duration.observe(result.latencyMs / 1000);
      });
      events.on("check:shortage", (reason) => shortages.inc({ reason }));
      events.on("store:written", (ms, runs) => {
        storeBatches.observe(ms / 1000);
        storeBatchResults.inc(runs);
      });
      events.on("store:failed", () => storeWriteFailures.inc());
      events.on("results:dropped", (count) => resultsDropped.inc(count));
    },
    deliveryAttempt(channel: string, outcome: string): void {
      deliveries.inc({ channel, outcome });
    },
    retentionBatch(ms: number, deleted: number): void {
      retentionBatches.observe(ms / 1000);
      retentionDeleted.inc(deleted);
    },
  };
}

const escape = (value: string) => value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

/**
 * prom-client's default nodejs_active_{handles,requests,resources}_total are gauges named like counters, which
 * promtool refuses; the same counts are there by type without the suffix (nodejs_active_handles{type}).
 */
function withoutTotalGauges(text: string): string {
  return text.replace(/^(# (HELP|TYPE) )?nodejs_active_(handles|requests|resources)_total\b.*\n/gm, "");
}

/** One gauge family of per-service series: its help, and a value per service (undefined: no series). */
const families: readonly [string, string, (facts: ServiceSeen) => number | undefined][] = [
  ["healthd_service_up", "1 when the service's last check passed, 0 when it failed (absent before its first check)", (f) =>
    f.state && f.state.status !== "unknown" ? Number(f.state.status === "up") : undefined],
  ["healthd_service_consecutive_failures", "Failed checks in a row", (f) =>
    f.state && f.state.status !== "unknown" ? f.state.consecutiveFailures : undefined],
  ["healthd_service_last_check_timestamp_seconds", "When the service was last checked (Unix seconds)", (f) =>
    f.lastCheckedAt === undefined ? undefined : f.lastCheckedAt / 1000],
  ["healthd_service_last_latency_seconds", "Total response time of the service's last check", (f) =>
    f.latencyMs === undefined ? undefined : f.latencyMs / 1000],
  ["healthd_service_certificate_expiry_timestamp_seconds", "When the service's TLS certificate expires (Unix seconds), as its last check saw it", (f) =>
    f.certExpiresAt === undefined ? undefined : f.certExpiresAt / 1000],
  ["healthd_heartbeat_last_ping_timestamp_seconds", "When a heartbeat was last pinged (Unix seconds), by a ping this node took", (f) =>
    f.lastPingAt === undefined ? undefined : f.lastPingAt / 1000],
  ["healthd_heartbeat_last_run_duration_seconds", "How long a heartbeat's last finished run took, start to finish", (f) =>
    f.lastRunDurationMs === undefined ? undefined : f.lastRunDurationMs / 1000],
];

function perServiceText(sources: MetricSources): string {
  const lines = families.map(([name, help]) => [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`]);
  for (const service of sources.services()) {
    const facts = sources.facts(service.key);
    if (!facts) continue;
    const labels = `{server="${escape(service.serverId)}",service="${escape(service.serviceId)}",type="${service.check.type}"}`;
    families.forEach(([name, , value], i) => {
      const v = value(facts);
      if (v !== undefined) lines[i]!.push(`${name}${labels} ${v}`);
    });
  }
  return lines.map((family) => family.join("\n")).join("\n") + "\n";
}

/**
 * The event-loop delay summaries prom-client makes, with the same names and meaning, from the daemon's tick:
 * over the ticks since the last scrape, then begun again (none since then reads as no delay).
 */
function loopDelayGauges(registry: Registry, delays: RecordableHistogram): void {
  const summaries: [name: string, help: string, value: () => number][] = [
    ["min", "The minimum recorded event loop delay.", () => delays.min],
    ["max", "The maximum recorded event loop delay.", () => delays.max],
    ["mean", "The mean of the recorded event loop delays.", () => delays.mean],
    ["stddev", "The standard deviation of the recorded event loop delays.", () => delays.stddev],
    ["p50", "The 50th percentile of the recorded event loop delays.", () => delays.percentile(50)],
    ["p90", "The 90th percentile of the recorded event loop delays.", () => delays.percentile(90)],
    ["p99", "The 99th percentile of the recorded event loop delays.", () => delays.percentile(99)],
  ];
  // The first gauge's collect sets them all: a scrape collects the gauges in the order they were made.
  const collect = () => {
    for (const { gauge, value } of gauges) gauge.set(delays.count === 0 ? 0 : value() / 1e9);
    delays.reset();
  };
  const gauges = summaries.map(([name, help, value], i) => {
    registry.removeSingleMetric(`nodejs_eventloop_lag_${name}_seconds`);
    return { value, gauge: new Gauge({ name: `nodejs_eventloop_lag_${name}_seconds`, help, registers: [registry], ...(i === 0 ? { collect } : {}) }) };
  });
}
