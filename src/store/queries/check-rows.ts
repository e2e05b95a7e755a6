/**
 * A check's row into its stored value and back: each kind's fields in the columns of http_check_configs (the
 * table's name is older than tcp, dns and heartbeats), its alerting settings beside them.
 */
import type { Selectable } from "kysely";
import { type Check, type HeartbeatCheck, type HttpCheck, type DnsCheck, type IcmpCheck, type TcpCheck, type TlsCheck, type UdpCheck, type WebsocketCheck, type GrpcCheck, type PostgresCheck, registeredDomain, targetOf, type StoredCheck } from "../../domain/model.ts";
import type { HttpCheckConfigsTable } from "../tables.ts";

export type CheckRow = Omit<Selectable<HttpCheckConfigsTable>, "service_key">;

/** What every kind of check keeps in its own columns. */
function alertingFromRow(row: CheckRow) {
  return {
    notify: Boolean(row.notify),
    notifyThreshold: row.notify_threshold,
    notifyTopic: row.notify_topic,
    paused: Boolean(row.paused),
    recoverThreshold: row.recover_threshold,
    remindEveryMinutes: row.remind_every_minutes,
    dependsOn: JSON.parse(row.depends_on) as string[],
    channels: JSON.parse(row.channels ?? "null") as string[] | null,
    slaTarget: row.sla_target,
    ...(row.escalate === null ? {} : { escalate: JSON.parse(row.escalate) as { afterMinutes: number; channels: string[] }[] }),
  };
}

export function checkFromRow(row: CheckRow): StoredCheck {
  if (row.type === "heartbeat") {
    const probe = JSON.parse(row.probe!) as Omit<HeartbeatCheck, "type" | keyof HeartbeatKeys | keyof ReturnType<typeof alertingFromRow>>;
    // In the order a reader expects them, whatever order the JSON kept.
    const { periodSeconds, cron, timezone, graceSeconds, maxRunSeconds, minRunSeconds, manualResume = false } = probe;
    return {
      type: "heartbeat", periodSeconds, cron, timezone, graceSeconds, maxRunSeconds, minRunSeconds, manualResume,
      pingKey: row.ping_key!, pushToken: row.push_token, gatusKey: row.gatus_key, ...alertingFromRow(row),
    };
  }
  const active = {
    intervalSeconds: row.interval_seconds,
    cron: row.cron,
    timeoutMs: row.timeout_ms,
    ...alertingFromRow(row),
    locations: row.locations === null ? null : (JSON.parse(row.locations) as string[]),
    quorum: row.quorum,
    slowMs: row.slow_ms,
    notifySlow: Boolean(row.notify_slow),
    domainWarnDays: row.domain_warn_days,
  };
  if (row.type === "tcp") {
    const { host, port, tls, send } = JSON.parse(row.probe!) as Pick<TcpCheck, "host" | "port" | "tls" | "send">;
    const expect = JSON.parse(row.expect) as TcpCheck["expect"];
    return { type: "tcp", host, port, tls, verifyTls: Boolean(row.verify_tls), send, expect, certWarnDays: row.cert_warn_days, ...active };
  }
  if (row.type === "tls") {
    const { host, port, starttls, servername, minVersion } = JSON.parse(row.probe!) as Pick<TlsCheck, "host" | "port" | "starttls" | "servername" | "minVersion">;
    const expect = JSON.parse(row.expect) as TlsCheck["expect"];
    return { type: "tls", host, port, starttls, servername, verifyTls: Boolean(row.verify_tls), minVersion, expect, certWarnDays: row.cert_warn_days, ...active };
  }
  if (row.type === "icmp") {
    const { host, count, maxLossPercent, maxLatencyMs } = JSON.parse(row.probe!) as Pick<IcmpCheck, "host" | "count" | "maxLossPercent" | "maxLatencyMs">;
    return { type: "icmp", host, count, maxLossPercent, maxLatencyMs, ...active };
  }
  if (row.type === "udp") {
    const { host, port, send, sendHex } = JSON.parse(row.probe!) as Pick<UdpCheck, "host" | "port" | "send" | "sendHex">;
    return { type: "udp", host, port, send, sendHex, expect: JSON.parse(row.expect) as UdpCheck["expect"], ...active };
  }
  if (row.type === "websocket") {
    const { protocols, send } = JSON.parse(row.probe!) as Pick<WebsocketCheck, "protocols" | "send">;
    const headers = JSON.parse(row.headers) as Record<string, string>;
    return { type: "websocket", url: row.url, headers, protocols, verifyTls: Boolean(row.verify_tls), send, expect: JSON.parse(row.expect) as WebsocketCheck["expect"], ...active };
  }
  if (row.type === "grpc") {
    const { target, tls, service, maxLatencyMs } = JSON.parse(row.probe!) as Pick<GrpcCheck, "target" | "tls" | "service" | "maxLatencyMs">;
    return { type: "grpc", target, tls, verifyTls: Boolean(row.verify_tls), service, maxLatencyMs, ...active };
  }
  if (row.type === "postgres" || row.type === "mysql" || row.type === "redis") {
    // The URL as written (its password a ${NAME}), not the target shown in `url`, which leaves even that out.
    const { url, query } = JSON.parse(row.probe!) as Pick<PostgresCheck, "url" | "query">;
    return { type: row.type, url, query, expect: JSON.parse(row.expect) as PostgresCheck["expect"], ...active };
  }
  if (row.type === "dns") {
    const { name, recordType, server } = JSON.parse(row.probe!) as Pick<DnsCheck, "name" | "recordType" | "server">;
    return { type: "dns", name, recordType, server, expect: JSON.parse(row.expect) as DnsCheck["expect"], ...active };
  }
  return {
    type: "http",
    url: row.url,
    method: row.method as HttpCheck["method"],
    headers: JSON.parse(row.headers) as Record<string, string>,
    body: row.body,
    intervalSeconds: row.interval_seconds,
    cron: row.cron,
    timeoutMs: row.timeout_ms,
    followRedirects: Boolean(row.follow_redirects),
    verifyTls: Boolean(row.verify_tls),
    expect: JSON.parse(row.expect) as HttpCheck["expect"],
    // An http check's probe column holds its steps, when it has them (none: null, and no key).
    ...(row.probe === null ? {} : { steps: (JSON.parse(row.probe) as Pick<HttpCheck, "steps">).steps }),
    ...alertingFromRow(row),
    certWarnDays: row.cert_warn_days,
    locations: row.locations === null ? null : (JSON.parse(row.locations) as string[]),
    quorum: row.quorum,
    slowMs: row.slow_ms,
    notifySlow: Boolean(row.notify_slow),
    domainWarnDays: row.domain_warn_days,
  };
}

/** A heartbeat's addresses as stored: its ping key, and those other tools gave it (null: none). */
export interface HeartbeatKeys {
  readonly pingKey: string;
  readonly pushToken: string | null;
  readonly gatusKey: string | null;
}

/**
 * The columns of a check, as written. Absent notify settings are left out: the schema's defaults fill them,
 * but for a heartbeat's threshold, 0 (a daily backup cannot wait a day). `keys`: a heartbeat's addresses, as kept.
 */
export function checkToRow(key: number, check: Check, keys?: HeartbeatKeys) {
  const alerting = {
    service_key: key,
    ...(check.notify === undefined ? {} : { notify: check.notify }),
    notify_topic: check.notifyTopic,
    paused: check.paused,
    recover_threshold: check.recoverThreshold,
    remind_every_minutes: check.remindEveryMinutes,
    depends_on: JSON.stringify(check.dependsOn),
    channels: check.channels === null ? null : JSON.stringify(check.channels),
    sla_target: check.slaTarget,
    escalate: check.escalate ? JSON.stringify(check.escalate) : null,
  };
  if (check.type === "heartbeat") {
    const { type, pingKey: _, pushToken: _p, gatusKey: _g, notify, notifyThreshold, notifyTopic, paused, recoverThreshold, remindEveryMinutes, dependsOn, channels, slaTarget, escalate, ...probe } = check;
    // The columns of an http check, which a heartbeat has none of, hold what means nothing.
    return {
      ...alerting,
      notify_threshold: notifyThreshold ?? 0,
      type,
      probe: JSON.stringify(probe),
      ping_key: keys?.pingKey ?? null,
      push_token: keys?.pushToken ?? null,
      gatus_key: keys?.gatusKey ?? null,
      url: "",
      method: "GET",
      headers: "{}",
      body: null,
      interval_seconds: null,
      cron: null,
      timeout_ms: 0,
      follow_redirects: false,
      verify_tls: false,
      expect: "[]",
      cert_warn_days: null,
      locations: null,
      quorum: null,
      slow_ms: null,
      notify_slow: false,
      domain_warn_days: null,
      domain: null,
    };
  }
  const active = {
    ...alerting,
    ...(check.notifyThreshold === undefined ? {} : { notify_threshold: check.notifyThreshold }),
    type: check.type,
    ping_key: null,
    push_token: null,
    gatus_key: null,
    interval_seconds: check.intervalSeconds,
    cron: check.cron,
    timeout_ms: check.timeoutMs,
    expect: JSON.stringify("expect" in check ? check.expect : []),
    locations: check.locations === null ? null : JSON.stringify(check.locations),
    quorum: check.quorum,
    slow_ms: check.slowMs,
    notify_slow: check.notifySlow,
    domain_warn_days: check.domainWarnDays,
    domain: check.domainWarnDays === null ? null : registeredDomain(check),
  };
  if (check.type === "websocket") {
    // Its URL and headers have an http check's columns; what else it has, the probe.
    const probe = { protocols: check.protocols, send: check.send };
    return { ...active, probe: JSON.stringify(probe), url: check.url, method: "GET", headers: JSON.stringify(check.headers), body: null, follow_redirects: false, verify_tls: check.verifyTls, cert_warn_days: null };
  }
  if (check.type === "grpc") {
    const probe = { target: check.target, tls: check.tls, service: check.service, maxLatencyMs: check.maxLatencyMs };
    return { ...active, probe: JSON.stringify(probe), url: targetOf(check)!, method: "GET", headers: "{}", body: null, follow_redirects: false, verify_tls: check.verifyTls, cert_warn_days: null };
  }
  if (check.type !== "http") {
    // The columns of an http check that the kind has no use for hold what means nothing; url holds its target.
    const probe =
      check.type === "tcp"
        ? { host: check.host, port: check.port, tls: check.tls, send: check.send }
        : check.type === "udp"
          ? { host: check.host, port: check.port, send: check.send, sendHex: check.sendHex }
          : check.type === "tls"
            ? { host: check.host, port: check.port, starttls: check.starttls, servername: check.servername, minVersion: check.minVersion }
            : check.type === "icmp"
              ? { host: check.host, count: check.count, maxLossPercent: check.maxLossPercent, maxLatencyMs: check.maxLatencyMs }
              : check.type === "postgres" || check.type === "mysql" || check.type === "redis"
                ? { url: check.url, query: check.query }
                : { name: check.name, recordType: check.recordType, server: check.server };
    return {
      ...active,
      probe: JSON.stringify(probe),
      url: targetOf(check)!,
      method: "GET",
      headers: "{}",
      body: null,
      follow_redirects: false,
      verify_tls: check.type === "tcp" || check.type === "tls" ? check.verifyTls : false,
      cert_warn_days: check.type === "tcp" || check.type === "tls" ? check.certWarnDays : null,
    };
  }
  return {
    ...active,
    probe: check.steps === undefined ? null : JSON.stringify({ steps: check.steps }),
    url: check.url,
    method: check.method,
    headers: JSON.stringify(check.headers),
    body: check.body,
    follow_redirects: check.followRedirects,
    verify_tls: check.verifyTls,
    cert_warn_days: check.certWarnDays,
  };
}
