/**
 * Report CSV against spreadsheet formulas: a text cell that begins with `=`, `+`, `-`, `@`, a tab or a CR is
 * written with a leading `'`, through the API and `healthd report --csv`; numbers stay numbers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { runHealthd } from "./support/cli.ts";

const names = { f: "=1+2", p: "+1", m: "-1", a: "@SUM(A1)", t: "\tx", r: "\rx", plain: "Shop - 2" };

for (const engine of engines) {
  test(`${engine}: report CSV: text cells that a spreadsheet would run are written with a leading ', numbers are not`, async (t) => {
    const d = await testDaemon(t, { engine });
    const services = [...Object.entries(names).map(([id, name]) => ({ id, name, check: { type: "heartbeat", periodSeconds: 3600 } })), { id: "-dash", check: { type: "heartbeat", periodSeconds: 3600 } }];
    const put = await d.api("PUT", "/services/web-01", { services });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const month = new Date().toISOString().slice(0, 7);
    const csv = await fetch(`${d.url}/reports?month=${month}&format=csv`);
    assert.equal(csv.status, 200);
    const text = await csv.text();
    const rows = text.split("\n");
    const row = (id: string) => rows.find((r) => r.startsWith(`web-01,${id},`)) ?? assert.fail(`no row for ${id} in ${JSON.stringify(text)}`);
    assert.match(row("f"), /^web-01,f,'=1\+2,,0,0,0,0,/);
    assert.match(row("p"), /^web-01,p,'\+1,/);
    assert.match(row("m"), /^web-01,m,'-1,/);
    assert.match(row("a"), /^web-01,a,'@SUM\(A1\),/);
    assert.match(row("t"), /^web-01,t,'\tx,/);
    assert.ok(text.includes(`web-01,r,"'\rx",`), JSON.stringify(text));
    assert.match(row("plain"), /^web-01,plain,Shop - 2,/, "a dash inside is left alone");
    assert.match(row("'-dash"), /^web-01,'-dash,'-dash,/, "an id is a text cell too (the name defaults to it)");
    if (engine === "sqlite") {
      const cli = await runHealthd(["report", "--db", d.db, "--month", month, "--csv"]);
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal(cli.stdout, text, "the CLI's CSV is the API's");
    }
  });
}
