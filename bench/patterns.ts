/**
 * npm run bench:patterns — what a user's pattern costs per match on the linear-time engine (checks/pattern.ts,
 * re2js) beside V8's RegExp, on a ~100 KB HTML-and-JSON body: medians of RUNS matches each. Then the engine's
 * worst case, which is linear in the text but grows with the pattern's size: a[ab]{k}c on 1 MiB of random a
 * and b (no DFA fits it, so every byte steps every state), where RegExp is fast and (A+)+B the reverse.
 * Environment: RUNS (51).
 */
import { compilePattern } from "../src/domain/pattern.ts";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 51);
const row = '<div class="row"><span>item</span> value 12345 lorem ipsum dolor sit amet</div>\n';
const body = row.repeat(Math.ceil(100_000 / row.length)) + '{"status": "ok", "version": "1.4.2"}';

function time(match: () => boolean, times = runs): number {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    match();
    ms.push(performance.now() - start);
  }
  return median(ms);
}

function compiled(source: string) {
  const pattern = compilePattern(source);
  if (!pattern.ok) throw new Error(pattern.problem);
  return pattern;
}

console.log(`body ${body.length} characters, median of ${runs} matches (ms)`);
console.log("pattern".padEnd(34), "re2js".padStart(8), "RegExp".padStart(8), "ratio".padStart(7), " found");
for (const source of ['"status":\\s*"ok"', "^<div", "Welcome", "\\d{4}-\\d{2}-\\d{2}", '"version": "1\\.\\d+', "(?i)STATUS", "(A+)+B"]) {
  const re2 = compiled(source);
  const js = new RegExp(source.replace("(?i)", ""), source.startsWith("(?i)") ? "i" : "");
  const a = time(() => re2.test(body));
  const b = time(() => js.test(body));
  console.log(source.padEnd(34), fixed(a, 3).padStart(8), fixed(b, 3).padStart(8), fixed(a / b, 0).padStart(7), "", re2.test(body));
}

let random = "";
let seed = 12345;
for (let i = 0; i < 1024 * 1024; i++) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  random += (seed >> 16) & 1 ? "a" : "b";
}
random += "c"; // so that no literal the engine looks for first rules the text out
console.log(`\nworst case: 1 MiB of random a and b, one match each (ms)`);
for (const k of [10, 50, 100, 200]) {
  const source = `a[ab]{${k}}c`;
  const re2 = compiled(source);
  console.log(source.padEnd(34), fixed(time(() => re2.test(random), 1), 0).padStart(8), fixed(time(() => new RegExp(source).test(random), 1), 3).padStart(8));
}
