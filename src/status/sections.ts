/**
 * A page of chosen services: which services its sections name. Pure: it takes every service and the
 * sections, and returns what to show.
 */
import type { StoredService } from "../store/store.ts";

export interface Section {
  readonly title: string;
  /** "server/service", or "server/*" for every service of the server (those added later too). */
  readonly services: readonly string[];
}

/**
 * The services the sections name, each once, and each section's as "server/service" in the order named
 * ("server/*": the server's services in the order they were made). A name that matches nothing (a service
 * since deleted) shows nothing.
 */
export function pickSections(sections: readonly Section[], all: readonly StoredService[]): { services: StoredService[]; sections: { title: string; refs: string[] }[] } {
  const byServer = new Map<string, StoredService[]>();
  for (const s of all) {
    let list = byServer.get(s.serverId);
    if (!list) byServer.set(s.serverId, (list = []));
    list.push(s);
  }
  const shown = new Map<string, StoredService>();
  const picked = sections.map(({ title, services }) => {
    const refs = services.flatMap((ref) => {
      const [serverId, serviceId] = ref.split("/") as [string, string];
      const matching = (byServer.get(serverId) ?? []).filter((s) => serviceId === "*" || s.id === serviceId);
      for (const s of matching) shown.set(`${s.serverId}/${s.id}`, s);
      return matching.map((s) => `${s.serverId}/${s.id}`);
    });
    return { title, refs: [...new Set(refs)] };
  });
  return { services: [...shown.values()], sections: picked };
}
