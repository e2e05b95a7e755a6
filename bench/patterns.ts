/**
 * npm run bench:patterns — what a user's pattern costs per match on the linear-time engine (checks/pattern.ts,
 * re2js) beside V8's RegExp, on a ~100 KB HTML-and-JSON body: medians of RUNS matches each. Then the engine's
 * worst case, which is linear in the text but grows with the pattern's size: a[ab]{k}c on 1 MiB of random a
 * and b (no DFA fits it, so every byte steps every state), where RegExp is fast and (A+)+B the reverse; and
 * how long the event loop is held while the daemon runs those on its worker thread (checks/matching.ts).
 * Environment: RUNS (51).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { inlineSteps, judged } from "../src/checks/matching.ts";
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

// What the daemon's loop pays for the same matches, which checks/matching.ts sends to its worker thread: the
// longest the loop was held while each ran (event-loop delay, ms), beside the match's own time.
console.log(`\nthe same on the worker thread: longest hold of the event loop while it ran (ms)`);
console.log("pattern".padEnd(34), "match".padStart(8), "held".padStart(8));
for (const k of [10, 50, 100, 200]) {
  const re2 = compiled(`a[ab]{${k}}c`);
  await judged((m) => m.test(re2, "warm the worker up with a match it runs: " + random.slice(0, inlineSteps)));
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const start = performance.now();
  await judged((m) => m.test(re2, random));
  const took = performance.now() - start;
  delay.disable();
  console.log(`a[ab]{${k}}c`.padEnd(34), fixed(took, 0).padStart(8), fixed(delay.max / 1e6, 1).padStart(8));
}
