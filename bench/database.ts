/**
 * A database for one bench run: a SQLite file in a temporary folder, or a fresh PostgreSQL database on the
 * server BENCH_PG names (postgres://postgres@127.0.0.1:5432/ by default; createdb and dropdb do the work).
 * `cleanUp` removes it.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const server = new URL(process.env.BENCH_PG ?? "postgres://postgres@127.0.0.1:5432/");

export function benchDatabase(engine: string, bench: string): { target: string; cleanUp(): void } {
  if (engine !== "postgres") {
    const dir = mkdtempSync(join(tmpdir(), `healthd-bench-${bench}-`));
    return { target: join(dir, `${bench}.db`), cleanUp: () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `healthd_bench_${randomBytes(4).toString("hex")}`;
  const args = ["-h", server.hostname, "-p", server.port || "5432", "-U", server.username || "postgres"];
  execFileSync("createdb", [...args, name]);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { target: url.toString(), cleanUp: () => execFileSync("dropdb", [...args, "--force", name]) };
}
