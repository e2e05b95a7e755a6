/**
 * A channel's secrets: shown as "***" in every answer and export (unless written as `${NAME}`, which names a
 * variable, not a secret), kept when a PUT sends back what it was shown, and filled from the sending node's
 * environment when a message goes out. And a check's, as a `read` token is shown them (maskedCheck): the same
 * rule of which names are secret, one for both.
 */
import { hasVariable, variablePattern, type ChannelDocument } from "./channel.ts";

export const mask = "***";

/** The fields that are secrets whatever they hold. */
const secretFields = new Set(["token", "password", "secret", "routingKey"]);
/** Types whose URL is itself the credential (an incoming webhook). */
const secretUrls = new Set(["slack", "discord", "teams", "mattermost"]);
/**
 * Header and field names whose values are credentials: authorization, proxy-authorization, cookie, and any
 * name holding token, key, secret or password (x-api-key, client_secret), case-insensitive.
 */
const secretHeader = /auth|token|key|secret|cookie|password/i;

type Fields = Record<string, unknown>;

/** `value` as answers show it: a URL's password masked, or the whole value. */
function shown(value: string, whole: boolean): string {
  if (hasVariable(value)) return value;
  if (whole) return mask;
  try {
    const url = new URL(value);
    if (!url.password) return value;
    url.password = mask;
    return url.toString().replace(encodeURIComponent(mask), mask);
  } catch {
    return value;
  }
}

/** Where a channel's secrets are: paths into its fields, and whether the whole value is secret (else a URL's password). */
function secretPaths(doc: Fields): { path: readonly string[]; whole: boolean }[] {
  const paths: { path: string[]; whole: boolean }[] = [];
  for (const key of Object.keys(doc)) {
    if (key === "headers" && doc.headers && typeof doc.headers === "object") {
      for (const name of Object.keys(doc.headers)) if (secretHeader.test(name)) paths.push({ path: ["headers", name], whole: true });
    } else if (secretFields.has(key)) paths.push({ path: [key], whole: true });
    else if (key === "url") paths.push({ path: [key], whole: secretUrls.has(String(doc.type)) });
  }
  return paths;
}

const at = (doc: Fields, path: readonly string[]): unknown => path.reduce<unknown>((v, key) => (v && typeof v === "object" ? (v as Fields)[key] : undefined), doc);
function put(doc: Fields, path: readonly string[], value: string): void {
  const parent = at(doc, path.slice(0, -1)) as Fields;
  parent[path.at(-1)!] = value;
}

/** A channel as GET answers and export write it. */
export function masked<T extends Fields>(doc: T): T {
  const copy = structuredClone(doc) as Fields;
  for (const { path, whole } of secretPaths(copy)) {
    const value = at(copy, path);
    if (typeof value === "string") put(copy, path, shown(value, whole));
  }
  return copy as T;
}

/** What a PUT sent, with each secret it sent back as it was shown ("***") replaced by the stored value. */
export function keepSecrets(sent: ChannelDocument, stored: ChannelDocument | undefined): ChannelDocument {
  if (!stored || stored.type !== sent.type) return sent;
  const copy = structuredClone(sent) as Fields;
  for (const { path, whole } of secretPaths(copy)) {
    const value = at(copy, path);
    const old = at(stored as Fields, path);
    if (typeof value === "string" && typeof old === "string" && value !== old && value === shown(old, whole)) put(copy, path, old);
  }
  return copy as ChannelDocument;
}

/** The secrets of `doc` still written as answers show them ("***" where no stored value was kept): their paths. */
export function maskedSecrets(doc: ChannelDocument): string[] {
  return secretPaths(doc as Fields)
    .filter(({ path }) => {
      const value = at(doc as Fields, path);
      return typeof value === "string" && value.includes(mask) && !hasVariable(value);
    })
    .map(({ path }) => "/" + path.join("/"));
}

/**
 * The channel with every `${NAME}` filled from `env` (`${NAME:-default}` when unset or empty). Throws naming the
 * variables this node's environment lacks.
 */
export function fillSecrets<T>(doc: T, env: NodeJS.ProcessEnv): T {
  const missing = new Set<string>();
  const fill = (value: unknown): unknown => {
    if (typeof value === "string") {
      return value.replace(variablePattern, (_, name: string, fallback: string | undefined) => {
        const found = env[name];
        if (found !== undefined && found !== "") return found;
        if (fallback !== undefined) return fallback;
        missing.add(name);
        return "";
      });
    }
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  const filled = fill(doc) as T;
  if (missing.size > 0) {
    const names = [...missing].join(", ");
    throw new Error(`this node's environment has no ${names}: set ${missing.size === 1 ? "it" : "them"} (systemd: EnvironmentFile=) and restart healthd`);
  }
  return filled;
}

/** JSON with the value of every field of a secret-looking name masked, at any depth. */
function maskedJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskedJson);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([name, v]) => [name, secretHeader.test(name) ? mask : maskedJson(v)]));
}

const formBody = /^[^=&\s]+=[^&\s]*(&[^=&\s]+=[^&\s]*)*$/;

/**
 * A request body as a `read` token is shown it: a JSON body or a form (a=1&b=2) with the values of its
 * secret-looking fields masked, and other text masked whole when it speaks of one (an XML <password>, a line
 * `AUTH ...`): nothing there says where the secret ends. Unchanged when nothing in it looks secret.
 */
function maskedBody(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object") {
      const masked = JSON.stringify(maskedJson(parsed));
      return masked === JSON.stringify(parsed) ? text : masked;
    }
  } catch {
    // not JSON: a form, or text
  }
  if (formBody.test(text)) return maskedForm(text);
  return secretHeader.test(text) ? mask : text;
}

/** A form or a query string (a=1&b=2) with the values of its secret-looking fields masked, the rest as written. */
function maskedForm(text: string): string {
  return text
    .split("&")
    .map((pair) => {
      const at = pair.indexOf("=");
      if (at < 0) return pair;
      const name = pair.slice(0, at);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replaceAll("+", " "));
      } catch {
        // a malformed escape: judged as written
      }
      return secretHeader.test(decoded) ? `${name}=${mask}` : pair;
    })
    .join("&");
}

/**
 * A check as a `read` token is shown it (http/access.ts, seesSecrets, decides who): the values of its
 * secret-looking headers and URL query parameters (?api_key=) masked, its request body (an http check's
 * `body`, a tcp check's `send`) masked as maskedBody says, and no `pingKey` (with it anyone could send /fail
 * and page people). A token that may write the check sees it whole.
 */
export function maskedCheck<C extends object>(check: C): C {
  const copy: Fields = { ...(check as Fields) };
  delete copy.pingKey;
  delete copy.pushToken; // Uptime Kuma's push URL pings it with no token, as the ping key does
  if (copy.headers !== null && typeof copy.headers === "object") {
    copy.headers = Object.fromEntries(Object.entries(copy.headers).map(([name, value]) => [name, secretHeader.test(name) ? mask : value]));
  }
  if (typeof copy.url === "string") {
    const at = copy.url.indexOf("?");
    if (at >= 0) {
      const end = copy.url.includes("#", at) ? copy.url.indexOf("#", at) : copy.url.length;
      copy.url = copy.url.slice(0, at + 1) + maskedForm(copy.url.slice(at + 1, end)) + copy.url.slice(end);
    }
  }
  for (const field of ["body", "send"]) {
    const value = copy[field];
    if (typeof value === "string") copy[field] = maskedBody(value);
  }
  // An http check's steps are requests of their own, masked alike.
  if (Array.isArray(copy.steps)) copy.steps = copy.steps.map((step: unknown) => (step !== null && typeof step === "object" ? maskedCheck(step) : step));
  return copy as C;
}
