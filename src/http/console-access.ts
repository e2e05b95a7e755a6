/**
 * Who a console request is, and what its forms must carry: the session's principal with its token's real scope,
 * and the secret its CSRF tokens derive from (console/csrf.ts). Shared by the console's pages and its actions.
 */
import type { ScheduleChange } from "../domain/model.ts";
import type { Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { Incident, Store } from "../store/store.ts";
import type { SendResult } from "../notify/outgoing.ts";
import { consoleCookie, csrfMatches, csrfToken, newConsoleSecret } from "../console/csrf.ts";
import { bearer, cookie, sessionCookie, type Access, type Principal } from "./access.ts";
import { HttpError } from "./problem.ts";
import type { Request } from "./router.ts";
import type { StatusViews } from "./status.ts";

export interface ConsoleContext {
  readonly store: Store;
  /** The views the status pages share, built again when what they show changes: the overview's rows are one. */
  readonly views: StatusViews;
  readonly access: Access;
  readonly version: string;
  readonly clock: Clock;
  /** Where each action is said, with who did it. */
  readonly log: Logger;
  /** Told of a change of configuration before the answer, as the API's PUTs tell it (the scheduler follows). */
  readonly scheduleChanged: (change: ScheduleChange) => Promise<void>;
  /** Run a service's check within a second, if this node runs it. */
  readonly runSoon: (key: number) => boolean;
  /** Send a channel its test message (the API's POST /channels/{name}/test). */
  readonly testChannel: (name: string) => Promise<SendResult>;
  /** Told of each acknowledgement made (the log says who; delivery sends its notification), as the API tells it. */
  readonly acknowledged: (incident: Incident) => void;
  /** What the status pages and the console show changed on these servers (a silence, an announcement ended). */
  readonly changed: (serverIds: readonly string[]) => void;
  /** Listen for services that changed state or configuration (the servers they are on; null: any); answers a function that stops. */
  readonly onChange: (listener: (serverIds: readonly string[] | null) => void) => () => void;
  /** Where people reach the daemon (serve --public-url), for a heartbeat's ping URL; null: this request's host. */
  readonly publicUrl: string | null;
}

/** Who is looking: the principal with its real scope, and the secret their forms' CSRF tokens come from (none: a bearer token). */
export interface Looking {
  readonly who: Principal;
  readonly secret: string | null;
  /** A cookie to set (the console's own, on a daemon open to anyone). */
  readonly setCookie?: string;
}

/** Who a console request is. Throws 401 (a page: the sign-in page) when the daemon needs a token and it has none. */
export async function looking(req: Request, access: Access): Promise<Looking> {
  const who = await req.principal();
  if (bearer(req.headers) !== undefined) return { who, secret: null };
  const session = cookie(req.headers, sessionCookie);
  const full = session === undefined ? undefined : await access.sessionPrincipal(session);
  if (full && session !== undefined) return { who: full, secret: session };
  // Open to anyone (no token anywhere): the forms are tied to a cookie of the console's own.
  const own = cookie(req.headers, consoleCookie);
  if (own && /^[A-Za-z0-9_-]{43}$/.test(own)) return { who, secret: own };
  const secret = newConsoleSecret();
  return { who, secret, setCookie: `${consoleCookie}=${secret}; Path=/console; HttpOnly; SameSite=Strict` };
}

export const mayWrite = (who: Principal) => who.scope === "write" || who.scope === "admin";

/** The viewer as the pages take it. */
export const viewerOf = (l: Looking) => ({ name: l.who.name, mayWrite: mayWrite(l.who), csrf: l.secret === null ? "" : csrfToken(l.secret) });

/**
 * Refuses (403) a form post whose CSRF token is not the session's, or that comes from another origin. A request
 * with a bearer token needs none: a browser never adds one by itself.
 */
export function checkForm(req: Request, l: Looking, fields: URLSearchParams): void {
  const origin = req.headers.origin;
  const host = (() => {
    try {
      // "null": what a browser sends from a page with Referrer-Policy no-referrer, as the console's are (the CSRF token still decides).
      return origin === undefined || origin === "null" ? undefined : new URL(origin).host;
    } catch {
      return ""; // not an origin at all: refused as another one is
    }
  })();
  if (host !== undefined && host !== req.headers.host) {
    throw new HttpError(403, `the form was posted from ${origin}, not from this console; use the console at its own address`);
  }
  if (l.secret === null) return;
  if (!csrfMatches(l.secret, fields.get("csrf"))) {
    throw new HttpError(403, "the form's CSRF token is missing or not this session's (signed in again since?); reload the page and try again", [{ path: "/csrf", message: "is not this session's" }]);
  }
}

