/**
 * What a PUT of a server document means for what is stored: pure. The document is the whole truth about
 * its server: services it names are created or updated, services it leaves out are deleted.
 */
import type { ServerDocument, ServiceDocument } from "../domain/model.ts";

export interface StoredServer {
  readonly name: string;
  readonly services: readonly { readonly key: number; readonly id: string; readonly name: string }[];
}

export interface ServerPlan {
  /** The server's name as it will be stored (its id when the document gives none). */
  readonly name: string;
  readonly renamed: boolean;
  readonly create: readonly ServiceDocument[];
  /** Services that stay; whether their check changed is known only once the store has written it. */
  readonly keep: readonly { readonly key: number; readonly doc: ServiceDocument; readonly renamed: boolean }[];
  readonly delete: readonly { readonly key: number; readonly id: string }[];
}

export function planServerChange(serverId: string, stored: StoredServer | undefined, doc: ServerDocument): ServerPlan {
  const name = doc.name ?? serverId;
  const current = new Map((stored?.services ?? []).map((s) => [s.id, s]));
  const wanted = new Set(doc.services.map((s) => s.id));
  return {
    name,
    renamed: stored !== undefined && stored.name !== name,
    create: doc.services.filter((s) => !current.has(s.id)),
    keep: doc.services.flatMap((s) => {
      const old = current.get(s.id);
      return old ? [{ key: old.key, doc: s, renamed: old.name !== (s.name ?? s.id) }] : [];
    }),
    delete: (stored?.services ?? []).filter((s) => !wanted.has(s.id)).map(({ key, id }) => ({ key, id })),
  };
}
