/**
 * `healthd check --postgres URL | --mysql URL | --redis URL [--query Q] [--expect JSON] [--timeout MS]`: an
 * ad-hoc database check, made from the same document a PUT takes, so the same rules hold (a password only as
 * ${NAME}, read from this shell's environment: write the URL in single quotes).
 */
import { UsageError } from "../platform/config.ts";
import type { Probed } from "../checks/probe.ts";
import type { DatabaseKind } from "../domain/schema/database.ts";
import { checkInput } from "../domain/schema/index.ts";
import { validate } from "../domain/validate.ts";

export interface DatabaseFlags {
  readonly postgres?: string;
  readonly mysql?: string;
  readonly redis?: string;
  readonly query?: string;
}

/** The ad-hoc check: `expect` as --expect parsed it (one alternative or a list). */
export function databaseAdHoc(kind: DatabaseKind, url: string, query: string | undefined, expect: unknown, timeoutMs: number | undefined): { name: string; check: Probed } {
  const input = Object.fromEntries(Object.entries({ type: kind, url, query, expect, timeoutMs }).filter(([, v]) => v !== undefined));
  const parsed = validate(checkInput, input);
  if (!parsed.ok) {
    const flag = (path: string) => (path === "/url" ? `--${kind}` : path === "/query" ? "--query" : path === "/timeoutMs" ? "--timeout" : path.startsWith("/expect") ? `--expect ${path.slice(7) || "/"}` : path);
    throw new UsageError(parsed.errors.map((e) => `${flag(e.path)}: ${e.message}`).join("\n"));
  }
  return { name: url, check: parsed.value as Probed };
}
