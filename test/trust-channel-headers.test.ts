/** A webhook channel's headers are checked as a check's are (issue 78): refused at PUT, naming the header. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { testDaemon } from "./support/daemon.ts";

test("a channel with a CR/LF, NUL or hop-by-hop header is 400 naming it; a check's rule, word for word", async (t) => {
  const d = await testDaemon(t);
  const channel = (headers: Record<string, string>) => ({ type: "webhook", url: "http://127.0.0.1:9/hook", headers });
  const refused = [
    [{ "X-Note": "a\r\nX-Injected: 1" }, "X-Note", /control characters \(CR, LF, NUL/],
    [{ "X-Note": "a\u0000b" }, "X-Note", /NUL/],
    [{ "Content-Length": "10" }, "Content-Length", /hop-by-hop\) and cannot be sent by a channel/],
    [{ "transfer-encoding": "chunked" }, "transfer-encoding", /hop-by-hop/],
    [{ connection: "close" }, "connection", /hop-by-hop/],
    [{ Host: "a b" }, "Host", /must be a host name/],
  ] as const;
  for (const [headers, name, message] of refused) {
    const put = await d.api("PUT", "/channels/hook", channel(headers));
    assert.equal(put.status, 400, `${name}: ${JSON.stringify(put.body)}`);
    const error = put.body.errors.find((e: { path: string }) => e.path === `/headers/${name}`);
    assert.ok(error, `${name} is named: ${JSON.stringify(put.body.errors)}`);
    assert.match(error.message, message);
    // The same header on a check is refused with the same words (but "by a check").
    const check = await d.api("PUT", "/services/s/x", { check: { url: "http://127.0.0.1:9/", headers } });
    assert.equal(check.status, 400);
    const same = check.body.errors.find((e: { path: string }) => e.path === `/check/headers/${name}`);
    assert.equal(same?.message, error.message.replace("by a channel", "by a check"));
  }
  assert.equal((await d.api("GET", "/channels/hook")).status, 404, "nothing was stored");
  assert.equal((await d.api("PUT", "/channels/hook", channel({ "X-Signature": "abc", Host: "hooks.example.org" }))).status, 201);
});
