/**
 * A fresh database for one test, on either engine: a SQLite file in a temporary folder, or a new PostgreSQL
 * database on the server every machine here runs (127.0.0.1:5432, user postgres, trust), dropped afterwards.
 * Store tests loop over `engines`, as Kysely's own suite loops over its dialects.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { after, type TestContext } from "node:test";
import { tempDbPath } from "./temp.ts";

export const engines = ["sqlite", "postgres"] as const;
export type TestEngine = (typeof engines)[number];

/** The server the tests use; HEALTHD_TEST_PG names another (a URL without the database). */
const server = new URL(process.env.HEALTHD_TEST_PG ?? "postgres://postgres@127.0.0.1:5432/");
const connection = ["-h", server.hostname, "-p", server.port || "5432", "-U", decodeURIComponent(server.username) || "postgres"];

/** Databases this test file made; dropped when the file is done (a test's own hooks have stopped its daemons). */
const created: string[] = [];
after(() => {
  for (const name of created) {
    execFileSync("dropdb", [...connection, "--force", "--if-exists", name], { stdio: "ignore", env: pgEnv() });
  }
});

export async function testDatabase(t: TestContext, engine: TestEngine): Promise<string> {
  if (engine === "sqlite") return tempDbPath(t);
  const name = `healthd_test_${randomBytes(6).toString("hex")}`;
  try {
    execFileSync("createdb", [...connection, name], { stdio: ["ignore", "ignore", "pipe"], env: pgEnv() });
  } catch (error) {
    throw new Error(
      `these tests need PostgreSQL at ${server.host} (user ${connection[5]}, trust auth) and its client tools: ` +
        `createdb failed: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}. ` +
        "Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start " +
        "(or point HEALTHD_TEST_PG at another server, e.g. postgres://postgres@host:5432/)",
      { cause: error },
    );
  }
  created.push(name);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

function pgEnv(): NodeJS.ProcessEnv {
  return server.password ? { ...process.env, PGPASSWORD: decodeURIComponent(server.password) } : process.env;
}
