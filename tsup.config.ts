import { defineConfig } from "tsup";

// One ESM bundle for the executable. Native and large runtime dependencies stay external:
// better-sqlite3 cannot be bundled (it loads a .node addon), the rest are installed beside it.
export default defineConfig({
  // The pattern worker is its own entry: a worker thread starts from a file (checks/matching.ts).
  entry: { main: "src/main.ts", "match-worker": "src/checks/match-worker.ts" },
  format: ["esm"],
  platform: "node",
  target: "node20",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  // Chunks for what only some subcommands load (the daemon for serve, ink for tail), so the others start fast.
  splitting: true,
  banner: { js: "#!/usr/bin/env node" },
});
