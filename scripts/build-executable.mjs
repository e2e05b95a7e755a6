/**
 * `npm run build:executable`: dist/healthd-linux-<arch>, one file holding Node, healthd and what it loads from
 * disk (better-sqlite3 with its native module, tldts), as a Node single executable application. Bundled with
 * esbuild (every other dependency inside healthd.mjs), injected into a copy of this Node with postject.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "executable");
const require = createRequire(join(root, "package.json"));
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// healthd and every pure-JS dependency in one module; the two loaded from disk stay outside. koffi (a native
// module, for icmp checks' shared socket) is neither bundled nor shipped: there its import fails, and icmp
// checks run the system's ping, as the daemon says at start (src/checks/icmp-socket.ts).
await build({
  entryPoints: [join(root, "src/main.ts")],
  outfile: join(out, "healthd.mjs"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: ["better-sqlite3", "tldts", "koffi"],
  plugins: [
    {
      // ink imports it only for DEV=true, which healthd never sets; in one file its import would run at start.
      name: "no-react-devtools",
      setup(build) {
        build.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: "react-devtools-core", namespace: "empty" }));
        build.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export default { connectToDevTools() {} };", loader: "js" }));
      },
    },
  ],
  // CommonJS dependencies inside an ES module still call require() for Node's own modules.
  banner: { js: 'import { createRequire as __healthdRequire } from "node:module"; const require = __healthdRequire(import.meta.url);' },
  legalComments: "none",
  logLevel: "warning",
});

/** The files of an installed package that load at run time: package.json and the named ones (folders whole). */
function packageFiles(name, paths) {
  const dir = dirname(require.resolve(`${name}/package.json`));
  const files = [];
  const walk = (path) => (statSync(path).isDirectory() ? readdirSync(path).forEach((entry) => walk(join(path, entry))) : files.push(path));
  for (const path of ["package.json", ...paths]) walk(join(dir, path));
  return files.map((file) => ({ file, name: `node_modules/${name}/${relative(dir, file)}` }));
}

// The worker thread that runs costly pattern matches starts from a file of its own beside healthd.mjs.
await build({
  entryPoints: [join(root, "src/checks/match-worker.ts")],
  outfile: join(out, "match-worker.mjs"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  legalComments: "none",
  logLevel: "warning",
});

const assets = [
  { file: join(out, "healthd.mjs"), name: "healthd.mjs" },
  { file: join(out, "match-worker.mjs"), name: "match-worker.mjs" },
  ...packageFiles("better-sqlite3", ["lib", "build/Release/better_sqlite3.node"]),
  ...packageFiles("bindings", ["bindings.js"]),
  ...packageFiles("file-uri-to-path", ["index.js"]),
  ...packageFiles("tldts", ["dist/cjs/index.js"]),
];
// A build is known by its content: a new one unpacks beside the old, never over a running one's files.
const hash = createHash("sha256");
for (const { file, name } of assets) hash.update(name).update(readFileSync(file));
const manifest = { build: `${version}-${hash.digest("hex").slice(0, 16)}`, files: assets.map((a) => a.name) };
writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest));

const config = {
  main: join(root, "scripts/executable-main.cjs"),
  output: join(out, "sea.blob"),
  disableExperimentalSEAWarning: true,
  assets: Object.fromEntries([["manifest.json", join(out, "manifest.json")], ...assets.map((a) => [a.name, a.file])]),
};
writeFileSync(join(out, "sea-config.json"), JSON.stringify(config, null, 2));
execFileSync(process.execPath, ["--experimental-sea-config", join(out, "sea-config.json")], { stdio: "inherit" });

const arch = { x64: "x64", arm64: "arm64" }[process.arch] ?? process.arch;
const executable = join(root, "dist", `healthd-linux-${arch}`);
rmSync(executable, { force: true });
copyFileSync(process.execPath, executable);
chmodSync(executable, 0o755);
execFileSync(
  process.execPath,
  [require.resolve("postject/dist/cli.js"), executable, "NODE_SEA_BLOB", config.output, "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"],
  { stdio: ["ignore", "ignore", "inherit"] },
);
const size = statSync(executable).size;
process.stdout.write(`${relative(root, executable)}: ${(size / 1024 / 1024).toFixed(1)} MiB (build ${manifest.build})\n`);
