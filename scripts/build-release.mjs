/**
 * `npm run build:release`: dist/healthd-<version>-linux-<arch>.tar.gz, what a server needs and nothing else:
 * the executable (as `healthd`), the systemd unit, an example env file, the README and the licence.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const arch = process.arch;
const name = `healthd-${version}-linux-${arch}`;

execFileSync(process.execPath, [join(root, "scripts/build-executable.mjs")], { stdio: "inherit" });
const stage = join(root, "dist", "release", name);
rmSync(join(root, "dist", "release"), { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
copyFileSync(join(root, "dist", `healthd-linux-${arch}`), join(stage, "healthd"));
chmodSync(join(stage, "healthd"), 0o755);
copyFileSync(join(root, "contrib/systemd/healthd.service"), join(stage, "healthd.service"));
copyFileSync(join(root, "contrib/healthd.env.example"), join(stage, "healthd.env.example"));
copyFileSync(join(root, "README.md"), join(stage, "README.md"));
copyFileSync(join(root, "LICENSE"), join(stage, "LICENSE"));
const tarball = join(root, "dist", `${name}.tar.gz`);
execFileSync("tar", ["-czf", tarball, "-C", join(root, "dist", "release"), name, "--owner=0", "--group=0"]);
process.stdout.write(`dist/${name}.tar.gz\n`);
