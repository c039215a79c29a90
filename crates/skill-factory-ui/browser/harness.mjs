// Shared harness for the dashboard's browser tests (crates/skill-factory-ui/browser/*.test.mjs).
// Node 20, ES module, no dependencies beyond what scripts/setup-browser.sh installs:
//   SKILL_FACTORY_BROWSER_MODULES  the node_modules folder that script prints (required), holding
//                                  playwright-core and axe-core
//   SKILL_FACTORY_CHROMIUM         the Chromium binary (default /usr/bin/chromium, Debian's)
//   SKILL_FACTORY_SCREENSHOTS      where screenshot() writes PNGs (default: a fresh temp folder)
//
// launch() uses playwright-core's chromium.launch(), not launchPersistentContext(): launch()
// already gives every browser a fresh temporary user data dir of its own (and removes it on
// close), and it returns a Browser, so tests call browser.newPage() and browser.close().
// Playwright refuses a --user-data-dir in args, so none is passed.
//
// Chromium reaches nothing but loopback: besides the flags that turn off its background traffic,
// every host name but localhost/127.0.0.1 resolves to "not found" (--host-resolver-rules), and
// every non-loopback URL, IP literals included, is sent to a proxy at 127.0.0.1:9 where nothing
// listens (--proxy-server; Chromium never proxies loopback), so it fails at once, locally.
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const MODULES = process.env.SKILL_FACTORY_BROWSER_MODULES;
if (!MODULES) {
  throw new Error(
    'SKILL_FACTORY_BROWSER_MODULES is not set: run scripts/setup-browser.sh and set it to the ' +
      'node_modules path that script prints',
  );
}
// createRequire wants a file path; a name inside the folder resolves packages from that folder.
const requireFromModules = createRequire(path.join(path.resolve(MODULES), 'noop.js'));
const { chromium } = requireFromModules('playwright-core');
const AXE_SOURCE_PATH = requireFromModules.resolve('axe-core/axe.min.js');

export const CHROMIUM = process.env.SKILL_FACTORY_CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Loopback only (see the header).
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
  '--proxy-server=http://127.0.0.1:9',
];

/** A headless Chromium (a Playwright Browser) with a fresh temporary profile. */
export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    // Playwright's own default flags stay; it adds none that reach the network.
    timeout: 60_000,
  });
}

let screenshotsDir;
function screenshotsFolder() {
  if (!screenshotsDir) {
    screenshotsDir =
      process.env.SKILL_FACTORY_SCREENSHOTS ||
      mkdtempSync(path.join(tmpdir(), 'skill-factory-screenshots-'));
    mkdirSync(screenshotsDir, { recursive: true });
  }
  return screenshotsDir;
}

/** Writes `<SKILL_FACTORY_SCREENSHOTS>/<name>.png` (the full page) and returns its path. */
export async function screenshot(page, name) {
  if (!/^[\w.-]+$/.test(name)) throw new Error(`screenshot name must be a plain file name: ${name}`);
  const file = path.join(screenshotsFolder(), `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

let axeSource;
/**
 * Runs axe-core (WCAG 2 A and AA rules) on the page as it is now and returns the violations, each
 * as { id, impact, help, helpUrl, targets } with the first few offending nodes' selectors.
 */
export async function axe(page) {
  axeSource ??= readFileSync(AXE_SOURCE_PATH, 'utf8');
  const loaded = await page.evaluate(() => typeof window.axe !== 'undefined');
  // Evaluated over the DevTools protocol, not added as a <script>: a page whose
  // Content-Security-Policy forbids inline script (the dashboard's does) would block that.
  if (!loaded) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      helpUrl: v.helpUrl,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    }));
  });
}

/** Formats axe() violations for an assertion message. */
export function formatViolations(violations) {
  return violations
    .map((v) => `- ${v.id} (${v.impact}): ${v.help}\n    ${v.targets.join('\n    ')}\n    ${v.helpUrl}`)
    .join('\n');
}

/** Throws an Error with `message` unless `condition` holds. */
export function check(condition, message) {
  if (!condition) throw new Error(message);
}
