/** Kuma's values as its database and backups hold them: loosely typed, read into what healthd needs. */
export const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
export const num = (v: unknown, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : fallback);
export const bool = (v: unknown) => v === true || v === 1 || v === "1" || v === "true";

/** A Kuma tag as healthd writes it: its name, or "name:value" when the monitor gives it a value. */
const tagText = (name: unknown, value: unknown) => (str(name) === null ? [] : [str(value) === null ? String(name) : `${String(name)}:${String(value)}`]);

/** A backup's monitor's tags: [{name, value, ...}] (server/model/monitor.js toJSON). */
export const backupTags = (tags: unknown): string[] => (Array.isArray(tags) ? tags.flatMap((t: Record<string, unknown> | null) => (t ? tagText(t.name, t.value) : [])) : []);

/** kuma.db's tags by monitor id: the `tag` table names them, `monitor_tag` gives each monitor its own, with an optional value. */
export function databaseTags(tags: readonly Record<string, unknown>[], links: readonly Record<string, unknown>[]): Map<number, string[]> {
  const names = new Map(tags.map((t) => [num(t.id, 0), t.name]));
  const byMonitor = new Map<number, string[]>();
  for (const link of links) {
    const monitor = num(link.monitor_id, 0);
    byMonitor.set(monitor, [...(byMonitor.get(monitor) ?? []), ...tagText(names.get(num(link.tag_id, 0)), link.value)]);
  }
  return byMonitor;
}
