/** The real daemon, in this process, on a free port and a temporary database. */
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { startDaemon, type Daemon, type DaemonOptions } from "../../src/daemon.ts";
import { silentLogger } from "../../src/platform/log.ts";
import { testDatabase, type TestEngine } from "./databases.ts";

export interface TestDaemon extends Daemon {
  /** What the daemon's --db is: a file path or a PostgreSQL URL. */
  readonly db: string;
  /** fetch against the daemon, JSON bodies in and out. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiAnswer>;
}

export interface ApiAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON, or text. Loosely typed: tests read answers by path and assert on them. */
  readonly body: any;
}

/** `engine` picks a fresh database of that engine when `db` is not given. Default sqlite. */
export async function testDaemon(t: TestContext, options: Partial<DaemonOptions> & { engine?: TestEngine } = {}): Promise<TestDaemon> {
  const { engine = "sqlite", ...rest } = options;
  const db = rest.db ?? (await testDatabase(t, engine));
  const daemon = await startDaemon({
    host: "127.0.0.1",
    port: 0,
    log: silentLogger,
    // No topic: notifications stay in the outbox as unsent unless a test points this at the ntfy stand-in.
    ntfy: { url: "http://127.0.0.1:9" },
    ...rest,
    db,
  });
  t.after(() => daemon.stop());
  return {
    ...daemon,
    db,
    async api(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === "string" ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)["content-type"] ??= "application/json";
      }
      const response = await fetch(daemon.url + path, init);
      const text = await response.text();
      const type = response.headers.get("content-type") ?? "";
      return { status: response.status, headers: response.headers, body: type.includes("json") && text ? JSON.parse(text) : text };
    },
  };
}

/**
 * Each check PUT alone as the service x of server s must be refused (400) with an error at its path whose
 * message matches; nothing is stored.
 */
export async function assertChecksRefused(d: TestDaemon, cases: readonly (readonly [check: unknown, path: string, message: RegExp])[]): Promise<void> {
  for (const [check, path, message] of cases) {
    const answer = await d.api("PUT", "/services/s", { services: [{ id: "x", check }] });
    assert.equal(answer.status, 400, JSON.stringify(check));
    const error = answer.body.errors.find((e: { path: string }) => e.path === path);
    assert.ok(error, `${JSON.stringify(check)}: no error at ${path} in ${JSON.stringify(answer.body.errors)}`);
    assert.match(error.message, message);
  }
  assert.equal((await d.api("GET", "/services/s")).status, 404, "nothing was stored");
}
