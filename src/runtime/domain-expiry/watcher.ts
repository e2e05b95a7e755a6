/**
 * Looks up the registrations of the domains this node's checks warn about (domainWarnDays): each at most once
 * a day, whichever node looks (the answers are kept in the database, so a restart does not ask again), one at
 * a time, at start and then every hour. What a lookup finds goes to the store; the write path decides the
 * DOMAIN warning with the check's next result. A registry without RDAP is said once in the log, never a failure.
 */
import { Agent, interceptors, request } from "undici";
import type { Clock } from "../../platform/clock.ts";
import type { Logger } from "../../platform/log.ts";
import type { DomainStore } from "../../store/store.ts";
import { version } from "../../platform/version.ts";
import { expiryOf, rdapUrl, type Bootstrap } from "./rdap.ts";

export const dayMs = 86_400_000;
/** The most of an RDAP answer read: a domain object is a few kB; a hostile server does not get to fill memory. */
const maxAnswerBytes = 1024 * 1024;

export interface WatcherOptions {
  readonly bootstrap: Bootstrap;
  readonly node: string;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often to look for domains due a lookup. Default an hour. */
  readonly everyMs?: number;
  /** One lookup's time limit. Default 10 s. */
  readonly timeoutMs?: number;
}

export class DomainWatcher {
  readonly #store: DomainStore;
  readonly #options: WatcherOptions;
  readonly #agent: Agent;
  /** Domains whose registry has no RDAP service, said once each. */
  readonly #told = new Set<string>();
  #timer: unknown;
  #looking: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(store: DomainStore, options: WatcherOptions) {
    this.#store = store;
    this.#options = options;
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.#agent = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } });
  }

  start(): void {
    const every = this.#options.everyMs ?? 3_600_000;
    const tick = () => {
      this.soon();
      this.#timer = this.#options.clock.setTimeout(tick, every, { unref: true });
    };
    tick();
  }

  /** When the lookups asked for so far are done. */
  settled(): Promise<void> {
    return this.#looking;
  }

  /**
   * Look for domains due now, after the lookups going on: of the services `keys` (created or changed), or of
   * every service this node runs. Only those of a change: a look at every check at every PUT cost each PUT
   * 9 ms with 50,000 services stored (bench:put).
   */
  soon(keys?: readonly number[]): void {
    if (this.#stopped) return;
    this.#looking = this.#looking
      .then(() => this.lookOnce(keys))
      .catch((error: unknown) => this.#options.log.warn("cannot look up domain registrations; trying again later", { error }));
  }

  /** Look up every domain due (of the services `keys`, or of all), one at a time. */
  async lookOnce(keys?: readonly number[]): Promise<void> {
    const now = this.#options.clock.now();
    for (const domain of await this.#store.domainsToLookUp(this.#options.node, now - dayMs, keys)) {
      if (this.#stopped) return;
      const found = await this.#lookUp(domain);
      if (found.problem !== null && !this.#told.has(domain)) {
        this.#told.add(domain);
        this.#options.log.warn("cannot tell when a domain's registration expires", { domain, problem: found.problem });
      }
      await this.#store.saveRegistration(domain, found, this.#options.clock.now());
    }
  }

  async #lookUp(domain: string): Promise<{ expiresAt: number | null; problem: string | null }> {
    const url = rdapUrl(this.#options.bootstrap, domain);
    if (url === null) return { expiresAt: null, problem: "its registry has no RDAP service in the bootstrap file (--rdap-bootstrap)" };
    const timeoutMs = this.#options.timeoutMs ?? 10_000;
    try {
      const response = await request(url, {
        headers: { accept: "application/rdap+json, application/json", "user-agent": `healthd/${version}` },
        // Thin registries answer with a redirect to the registrar's RDAP server.
        dispatcher: this.#agent.compose(interceptors.redirect({ maxRedirections: 3 })),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await readLimited(response.body, maxAnswerBytes);
      if (response.statusCode === 404) return { expiresAt: null, problem: `${new URL(url).host} does not know ${domain} (404)` };
      if (response.statusCode !== 200) return { expiresAt: null, problem: `${new URL(url).host} answered ${response.statusCode}` };
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return { expiresAt: null, problem: `${new URL(url).host} answered what is not JSON` };
      }
      const expiry = expiryOf(json);
      return expiry.ok ? { expiresAt: expiry.expiresAt, problem: null } : { expiresAt: null, problem: `${new URL(url).host}: ${expiry.problem}` };
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      if (e.code === "TOO_LARGE") return { expiresAt: null, problem: `${new URL(url).host} answered more than ${maxAnswerBytes} bytes` };
      const hung = e.name === "TimeoutError" || e.code?.includes("TIMEOUT");
      return { expiresAt: null, problem: hung ? `${new URL(url).host} did not answer within ${timeoutMs} ms` : `cannot reach ${new URL(url).host}: ${e.code ?? e.message}` };
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    await this.#looking;
    await this.#agent.close();
  }
}

async function readLimited(body: AsyncIterable<Buffer>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) throw Object.assign(new Error(`the answer is larger than ${max} bytes`), { code: "TOO_LARGE" });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
