/**
 * `healthd import --from gatus --apply --keep-tokens`: the tokens Gatus's external-endpoint jobs send become
 * healthd ping tokens limited to the servers of their heartbeats, so those jobs keep their Authorization header
 * as well as their URL. healthd keeps only a token's SHA-256, whoever made the secret, so a given one serves as
 * well as one it makes; but it is only as strong as it was in Gatus, and the first token closes an open API:
 * hence a flag, and a warning.
 */
import { hashToken } from "../http/access.ts";
import { systemClock } from "../platform/clock.ts";
import type { CarriedToken } from "../import/common.ts";
import { openForWriting, withStore } from "./database.ts";

/** Keep `tokens` in the database at `db`; each line said goes to stderr. */
export async function keepTokens(db: string, tokens: readonly CarriedToken[], say: (line: string) => void): Promise<void> {
  await withStore(openForWriting(db), async (store) => {
    const wasOpen = !(await store.hasTokens());
    let made = 0;
    for (const token of tokens) {
      const endpoints = `external endpoint${token.keys.length === 1 ? "" : "s"} ${token.keys.join(", ")}`;
      const secret = filled(token.secret);
      if (typeof secret !== "string") {
        say(`the token of ${endpoints} is ${token.secret}, and ${secret.unset} is not set: set it as Gatus had it and import again, or give the jobs a healthd token (healthd token create NAME --scope ping --server ${token.servers[0]})`);
        continue;
      }
      const hash = hashToken(secret);
      const existing = await store.tokenByHash(hash);
      if (existing) {
        const pings = existing.scope !== "read" && (existing.servers === null || token.servers.every((s) => existing.servers!.includes(s)));
        say(`the token of ${endpoints} is already healthd token ${existing.name}${pings ? "" : `, which may not ping server ${token.servers.join(", ")}: revoke it (healthd token revoke ${existing.name}) and import again`}`);
        continue;
      }
      const base = `gatus-${token.keys[0]!}`.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 60);
      let name = base;
      let created = await store.createToken({ name, scope: "ping", servers: token.servers, hash }, systemClock.now());
      for (let n = 2; created === "name taken"; n++) {
        name = `${base}-${n}`;
        created = await store.createToken({ name, scope: "ping", servers: token.servers, hash }, systemClock.now());
      }
      made++;
      say(`the token of ${endpoints} is kept as healthd token ${name} (scope ping, server ${token.servers.join(", ")})`);
    }
    if (wasOpen && made > 0) {
      say("the API had no tokens, so it was open; it now asks every request for one: make your own with healthd token create NAME --scope admin");
    }
  });
}

/** The secret with Gatus's `$VAR` and `${VAR}` filled from the environment, as Gatus fills its configuration. */
function filled(text: string): string | { readonly unset: string } {
  let unset: string | undefined;
  const value = text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_, braced: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const found = process.env[name];
    if (found === undefined || found === "") unset ??= name;
    return found ?? "";
  });
  return unset === undefined ? value : { unset };
}
