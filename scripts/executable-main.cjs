/**
 * The entry of healthd's single executable (Node's single executable applications run one CommonJS script).
 * healthd itself is an ES module bundle and needs two packages beside it on disk (better-sqlite3, whose native
 * module must be a file to be loaded, and tldts, loaded on first use): all are assets of the executable,
 * written once per build into a cache folder of this user, then imported from there.
 */
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const sea = require("node:sea");
const { pathToFileURL } = require("node:url");

const manifest = JSON.parse(sea.getAsset("manifest.json", "utf8"));

/** Where this build's files go: systemd's CacheDirectory=, the user's cache, else a private folder in /tmp. */
function folder() {
  const candidates = [process.env.CACHE_DIRECTORY, process.env.XDG_CACHE_HOME, process.env.HOME && path.join(process.env.HOME, ".cache")];
  for (const base of candidates) {
    if (!base) continue;
    const dir = path.join(base.split(":")[0], "healthd", manifest.build);
    try {
      fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
      fs.accessSync(path.dirname(dir), fs.constants.W_OK);
      return dir;
    } catch {
      // not writable here (a read-only home under systemd, say): the next one
    }
  }
  // Shared /tmp: a folder of this user's own, which nobody else may have made or written into.
  const own = path.join(os.tmpdir(), `healthd-${process.getuid()}`);
  fs.mkdirSync(own, { recursive: true, mode: 0o700 });
  const stat = fs.lstatSync(own);
  if (!stat.isDirectory() || stat.uid !== process.getuid() || (stat.mode & 0o077) !== 0) {
    throw new Error(`${own} is not a private folder of this user; remove it, or set XDG_CACHE_HOME`);
  }
  return path.join(own, manifest.build);
}

/** Write the files once: into a fresh folder, renamed into place whole, so a half-written one is never used. */
function unpack(dir) {
  if (fs.existsSync(path.join(dir, "healthd.mjs"))) return;
  const fresh = `${dir}.${process.pid}.tmp`;
  fs.rmSync(fresh, { recursive: true, force: true });
  for (const name of manifest.files) {
    const file = path.join(fresh, name);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, new Uint8Array(sea.getRawAsset(name)), { mode: 0o600 });
  }
  try {
    fs.renameSync(fresh, dir);
  } catch (error) {
    // Another process unpacked the same build first: use its folder.
    fs.rmSync(fresh, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, "healthd.mjs"))) throw error;
  }
}

let dir;
try {
  dir = folder();
  unpack(dir);
} catch (error) {
  process.stderr.write(`healthd: cannot unpack the executable's files (${error.message}); set XDG_CACHE_HOME to a folder this user may write\n`);
  process.exit(2);
}
import(pathToFileURL(path.join(dir, "healthd.mjs")).href);
