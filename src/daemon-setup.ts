/** What the daemon checks and opens before it starts anything: its exposure without a token, and its database. */
import { isLoopback } from "./http/access.ts";
import { UsageError } from "./platform/config.ts";
import { policy } from "./policy/index.ts";
import { openStore } from "./store/open.ts";
import type { Store } from "./store/store.ts";
import type { DaemonOptions } from "./daemon-options.ts";

/** Anyone who reaches a non-loopback address could change the checks: a token is needed, unless waived. */
export function refuseExposure(options: DaemonOptions): void {
  if (options.token !== undefined || isLoopback(options.host)) return;
  if (!options.allowNoToken) {
    throw new UsageError(
      `refusing to listen on ${options.host} without a token: anyone who could reach it could change your checks. ` +
        "Set one with --token, --token-file or HEALTHD_TOKEN (clients send Authorization: Bearer <token>), " +
        "or pass --allow-no-token if something in front of healthd already guards it",
    );
  }
  options.log.warn(`LISTENING ON ${options.host} WITHOUT A TOKEN: anyone who can reach this port can change and delete checks`);
}

/** Open (and create, and migrate) the database, saying in one line what the migrations did. */
export async function openDatabase(options: DaemonOptions): Promise<Store> {
  const { log } = options;
  try {
    return await openStore(options.db, {
      mode: "serve",
      log: log.child({ part: "store" }),
      policy,
      onMigrated: (applied) => {
        if (applied.length > 0) log.info(`applied ${applied.length} migration${applied.length === 1 ? "" : "s"}`, { last: applied.at(-1) });
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}
