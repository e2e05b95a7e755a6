/**
 * Runs random `healthd check --url ...` command lines in-process, in a child of the test (so that the
 * commands' own output does not mix with the test reporter's), and reports the exit codes to the parent.
 */
import fc from "fast-check";
import { run } from "../../src/cli/program.ts";

const { numRuns } = JSON.parse(process.argv[2] ?? "{}") as { numRuns: number };
// Only loopback URLs, or strings that are not http URLs: random host names would be looked up for real.
const url = fc.oneof(
  fc.string({ maxLength: 12 }).map((p) => `http://127.0.0.1:9/${encodeURIComponent(p)}`),
  fc.string({ maxLength: 12 }).filter((s) => !/^\s*https?:/i.test(s)),
);
const flags = fc.array(
  fc.oneof(
    fc.tuple(fc.constant("--method"), fc.oneof(fc.constantFrom("get", "POST", "head"), fc.string({ maxLength: 6 }))),
    fc.tuple(fc.constant("--header"), fc.string({ maxLength: 12 })),
    fc.tuple(fc.constant("--expect"), fc.oneof(fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), fc.string({ maxLength: 12 }))),
    fc.tuple(fc.constant("--timeout"), fc.oneof(fc.nat({ max: 400_000 }).map(String), fc.string({ maxLength: 5 }))),
    fc.tuple(fc.constant("--concurrency"), fc.string({ maxLength: 4 })),
    fc.tuple(fc.constantFrom("--json", "--record", "--bogus"), fc.constant(undefined)),
  ),
  { maxLength: 4 },
);

const codes: Record<number, number> = {};
const write = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
let failure: string | null = null;
try {
  process.stdout.write = () => true;
  process.stderr.write = () => true;
  await fc.assert(
    fc.asyncProperty(url, flags, async (target, pairs) => {
      const argv = ["node", "healthd", "check", "--url", target, ...pairs.flatMap(([flag, value]) => (value === undefined ? [flag] : [flag, value]))];
      const code = await run(argv);
      process.exitCode = 0;
      codes[code] = (codes[code] ?? 0) + 1;
      // Every flag here takes its value, even one that looks like a flag (--header -h): exit 0 is never right.
      if (code !== 1 && code !== 2) throw new Error(`exit ${code} for ${JSON.stringify(argv.slice(2))}`);
    }),
    { numRuns },
  );
} catch (error) {
  failure = (error as Error).message;
} finally {
  process.stdout.write = write.out;
  process.stderr.write = write.err;
}
process.send!({ codes, failure }, () => process.exit(0));
