/**
 * The sign-in page: what a browser gets instead of a 401 JSON when the daemon has a token. One field, the
 * token; no script. Its policy allows its own style and posting the form to this origin, nothing else.
 */
import { createHash } from "node:crypto";
import { html, raw } from "./html.ts";

const css = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --muted: #59636e; --line: #d1d9e0; --bad: #b42318; --accent: #0969da; --button: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #f0f6fc; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --bad: #ff7b72; --accent: #4493f8; --button: #1f6feb; } }
body { font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; display: grid; place-items: center; min-height: 100vh; }
main { width: min(24rem, 100vw - 2rem); }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
p { color: var(--muted); margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
input { box-sizing: border-box; width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
input:focus, button:focus { outline: 3px solid var(--accent); outline-offset: 1px; }
button { margin-top: .75rem; font: inherit; font-weight: 600; padding: .5rem 1rem; border: 0; border-radius: 6px; background: var(--button); color: #fff; cursor: pointer; }
.error { color: var(--bad); font-weight: 600; }
`;

export const signInPolicy = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(css).digest("base64")}'`,
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The page; `next` is where a successful sign-in goes (a path of this daemon), `error` what went wrong. It says
 * nothing of the daemon (not even its version) to whoever has no token yet.
 */
export function renderSignIn(options: { next: string; error?: string | undefined }): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">
<link rel="icon" href="/favicon.ico" type="image/svg+xml"><title>Sign in: healthd</title>
<style>${raw(css)}</style></head>
<body><main>
<h1>Sign in to healthd</h1>
<p>This healthd needs a token to show its status. A token that may read (read, write or admin) signs this browser in for 30 days; a write token may then also act in the console (/console).</p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ""}
<form method="post" action="/login">
<input type="hidden" name="next" value="${options.next}">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</main></body></html>
`.text;
}
