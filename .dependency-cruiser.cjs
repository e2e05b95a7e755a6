/**
 * The layers of src/, held by `npm test` (test/layers.test.ts runs dependency-cruiser with this file).
 * domain <- policy <- store, checks, notify <- runtime <- http, status, console, cli, import <- daemon, main;
 * platform (clock, log, config, tick) may be used by every layer but the pure ones (domain, policy).
 */
const layer = (name) => `^src/${name}/`;
module.exports = {
  forbidden: [
    { name: "no-cycles", severity: "error", comment: "a cycle means two files are one concern, or a type is in the wrong layer", from: {}, to: { circular: true } },
    { name: "domain-is-the-base", severity: "error", comment: "domain/ holds the words and documents; it imports nothing else of src", from: { path: layer("domain") }, to: { path: "^src/", pathNot: layer("domain") } },
    { name: "policy-is-pure", severity: "error", comment: "policy/ decides from values: it imports only domain/ (no clock, no database, no network)", from: { path: layer("policy") }, to: { path: "^src/", pathNot: [layer("domain"), layer("policy")] } },
    { name: "platform-is-below", severity: "error", comment: "platform/ (clock, log, config, metrics) is used by the layers, and uses none of them but domain/", from: { path: layer("platform") }, to: { path: "^src/", pathNot: [layer("domain"), layer("platform")] } },
    { name: "engines-stay-in-the-store", severity: "error", comment: "only store/ reaches its engines and queries; the rest asks the Store", from: { path: "^src/", pathNot: layer("store") }, to: { path: "^src/store/(sqlite|postgres|queries)/" } },
    { name: "store-reads-and-writes", severity: "error", comment: "store/ imports domain/, policy/ (it asks decide) and platform/, nothing above it", from: { path: layer("store") }, to: { path: "^src/", pathNot: [layer("domain"), layer("policy"), layer("platform"), layer("store")] } },
    { name: "checks-and-notify-below-runtime", severity: "error", comment: "checks/ and notify/ are used by runtime/, never the reverse", from: { path: "^src/(checks|notify)/" }, to: { path: "^src/(runtime|http|status|console|cli|import)/|^src/daemon\\.ts$" } },
    { name: "runtime-below-the-edges", severity: "error", comment: "runtime/ is driven by the daemon and the edges (http, status, console, cli), never the reverse", from: { path: layer("runtime") }, to: { path: "^src/(http|status|console|cli|import)/|^src/daemon\\.ts$" } },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    exclude: { path: "^(test|bench|scripts)/" },
  },
};
