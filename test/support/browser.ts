/**
 * Debian's Chromium driven by playwright-core, for the tests of the status page. No browser download works on
 * these machines: .ci/run installs the chromium package, and a machine without it fails these tests with a
 * message saying so.
 */
import { existsSync } from "node:fs";
import type { TestContext } from "node:test";
import { chromium, type Browser } from "playwright-core";

export const chromiumPath = "/usr/bin/chromium";

/** `args`: more of Chromium's flags (such as --host-resolver-rules, to reach the daemon under a host name of a test's). */
export async function launchBrowser(t: TestContext, args: readonly string[] = []): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`these tests need Chromium at ${chromiumPath}: apt-get install chromium (.ci/run installs it when missing)`);
  }
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", ...args],
  });
  t.after(() => browser.close());
  return browser;
}
