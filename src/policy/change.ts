/**
 * What a change of configuration changes: pure. A PUT of a server document is the whole truth about its
 * server: services it names are created or updated, services it leaves out are deleted (planServerChange).
 * A kept service's check is compared as stored before and after (checkChange): when it differs, the service is
 * started again (ScheduleChange.started: placed among the nodes, read again and scheduled anew); when only its
 * name does, it keeps its owner and its schedule.
 */
import { sameCheck, type ServerDocument, type ServiceDocument, type StoredCheck } from "../domain/model.ts";

export interface StoredServer {
  readonly name: string;
  /** Their tags as stored (a JSON list); left out, none. */
  readonly services: readonly { readonly key: number; readonly id: string; readonly name: string; readonly tags?: string }[];
}

export interface ServerPlan {
  /** The server's name as it will be stored (its id when the document gives none). */
  readonly name: string;
  readonly renamed: boolean;
  readonly create: readonly ServiceDocument[];
  /** Services that stay; whether their check changed is known only once the store has written it. */
  readonly keep: readonly { readonly key: number; readonly doc: ServiceDocument; readonly renamed: boolean; readonly retagged: boolean }[];
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
      return old ? [{ key: old.key, doc: s, renamed: old.name !== (s.name ?? s.id), retagged: retagged(old, s) }] : [];
    }),
    delete: (stored?.services ?? []).filter((s) => !wanted.has(s.id)).map(({ key, id }) => ({ key, id })),
  };
}

/**
 * Whether a kept service's document changes its tags (stored as a JSON list). Tags are labels, as its name is:
 * written without touching its check, they never start it again.
 */
export function retagged(stored: { readonly tags?: string }, doc: Pick<ServiceDocument, "tags">): boolean {
  return (stored.tags ?? "[]") !== JSON.stringify(doc.tags ?? []);
}

/** What rewriting a kept service changed: the fields that differ (`check.url`, ...; its labels first: "name", "tags"). */
export interface ServiceChange {
  readonly fields: string[];
  /** Its check differs (not only its name): the service is started again. */
  readonly checkChanged: boolean;
}

/**
 * Compare a service's check as stored before (undefined: it had none) and after a write; both as stored, the
 * schema having filled in what the document left out, so a document that only spells out a default changes
 * nothing.
 */
export function checkChange(before: StoredCheck | undefined, after: StoredCheck, renamed: boolean, tagsChanged = false): ServiceChange {
  const fields = changedFields(before, after);
  const checkChanged = fields.length > 0;
  return { fields: [...(renamed ? ["name"] : []), ...(tagsChanged ? ["tags"] : []), ...fields], checkChanged };
}

/** The fields of a check that differ, or every field ("check") when there was none before. */
function changedFields(before: StoredCheck | undefined, after: StoredCheck): string[] {
  if (!before) return ["check"];
  if (sameCheck(before, after)) return [];
  const was: Readonly<Record<string, unknown>> = { ...before };
  const now: Readonly<Record<string, unknown>> = { ...after };
  // Both sides' keys: a field only one has (an http check's steps, added or taken away) changed too.
  return [...new Set([...Object.keys(after), ...Object.keys(before)])]
    .filter((k) => JSON.stringify(was[k]) !== JSON.stringify(now[k]))
    .map((k) => `check.${k}`);
}
