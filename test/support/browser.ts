/**
 * Headless Chromium for the specs of server-rendered pages (test/browser), driven by
 * puppeteer-core.
 *
 * puppeteer-core downloads no browser: the machine's Chromium is used (Debian's package,
 * /usr/bin/chromium; .ci/run installs it and exports REDLIMIT_CHROMIUM_BIN).
 *
 * - `describeBrowser` runs a block only where Chromium is found; without it, CI fails the suite
 *   (browser specs must run there) and elsewhere the block is skipped with a one-line note.
 * - `launchBrowser` starts one browser for a spec file (launch it in `beforeAll` with
 *   `BROWSER_HOOK_TIMEOUT_MS`, close it in `afterAll`); `withPage` opens a page and always closes
 *   it.
 * - The timeouts are bounds for a shared 2-core machine, never timing assertions.
 */
import { launch, type Browser, type HTTPResponse, type Page } from 'puppeteer-core';
import { findOnPath, isExecutable } from './redis-server';

/** The variable naming the Chromium binary to use (set by .ci/run). */
export const CHROMIUM_ENV = 'REDLIMIT_CHROMIUM_BIN';

/** Bound on Chromium's start, generous for a loaded machine. */
export const LAUNCH_TIMEOUT_MS = 60_000;

/**
 * Bound on one page operation (navigation, wait, click): below Jest's 30 s test timeout, so a
 * page that never answers fails with Puppeteer's error, not a bare test timeout.
 */
export const PAGE_TIMEOUT_MS = 20_000;

/** Timeout to give the `beforeAll` that launches the browser (and the `afterAll` closing it). */
export const BROWSER_HOOK_TIMEOUT_MS = LAUNCH_TIMEOUT_MS + 30_000;

const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/**
 * Flags added to Puppeteer's defaults (which already turn off background networking, sync,
 * crash reports and default apps).
 */
const CHROMIUM_ARGS = [
  // The tests run as root, where Chromium refuses its sandbox.
  '--no-sandbox',
  '--disable-gpu',
  // /dev/shm may be small: shared memory goes to /tmp instead.
  '--disable-dev-shm-usage',
  '--no-first-run',
  // No update checks: the machine's network is closed.
  '--disable-component-update',
];

/**
 * The Chromium binary to drive: REDLIMIT_CHROMIUM_BIN when it names an executable file, else
 * /usr/bin/chromium, else `chromium` on PATH; undefined when there is none.
 */
export function chromiumPath(): string | undefined {
  const fromEnv = process.env[CHROMIUM_ENV];
  if (fromEnv && isExecutable(fromEnv)) return fromEnv;
  if (isExecutable(DEFAULT_CHROMIUM)) return DEFAULT_CHROMIUM;
  return findOnPath('chromium');
}

/** Whether this run is CI's (CI set to anything but '', '0' or 'false'). */
function isCi(): boolean {
  const ci = (process.env.CI ?? '').trim().toLowerCase();
  return ci !== '' && ci !== '0' && ci !== 'false';
}

/**
 * `describe` for a block that drives Chromium. Without Chromium the block is skipped with a
 * one-line note on stderr, except on CI (`CI` set), where it throws: the suite fails, since CI
 * must run the browser specs.
 */
export function describeBrowser(name: string, fn: () => void): void {
  if (chromiumPath()) {
    describe(name, fn);
    return;
  }
  const where = `${CHROMIUM_ENV}, ${DEFAULT_CHROMIUM}, PATH`;
  if (isCi()) {
    throw new Error(
      `Chromium not found (looked at ${where}) but CI must run "${name}": install it ` +
        '(`apt-get install -y --no-install-recommends chromium`) or set ' +
        `${CHROMIUM_ENV}.`,
    );
  }
  process.stderr.write(`[redlimit test harness] "${name}" skipped: no Chromium (${where})\n`);
  describe.skip(name, fn);
}

/**
 * Starts a headless Chromium (the binary of `chromiumPath()`, a fresh temporary profile that
 * Puppeteer removes on close). Close it with `browser.close()`, in `afterAll`.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) {
    throw new Error(`Chromium not found (${CHROMIUM_ENV}, ${DEFAULT_CHROMIUM}, PATH)`);
  }
  return launch({
    executablePath,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: LAUNCH_TIMEOUT_MS,
    // A CDP call that never answers fails past this bound rather than hanging the spec.
    protocolTimeout: LAUNCH_TIMEOUT_MS,
  });
}

/**
 * Runs `fn` with a new page of `browser` (page operations bounded by `PAGE_TIMEOUT_MS`) and
 * closes the page afterwards, whether `fn` resolved or threw. Resolves to what `fn` resolved to.
 */
export async function withPage<T>(browser: Browser, fn: (page: Page) => Promise<T>): Promise<T> {
  const page = await browser.newPage();
  page.setDefaultTimeout(PAGE_TIMEOUT_MS);
  try {
    return await fn(page);
  } finally {
    await page.close();
  }
}

/**
 * Clicks the element matching `selector` (e.g. a form's submit button) and waits until the
 * navigation it starts has loaded. Resolves to the navigation's main response (null when the
 * navigation had none, e.g. to an anchor of the same page). Works with the page's scripts
 * disabled: the browser submits the form itself.
 */
export async function clickAndWait(page: Page, selector: string): Promise<HTTPResponse | null> {
  const [response] = await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    page.click(selector),
  ]);
  return response;
}

/**
 * The text of the first element matching `selector` as a person sees it, trimmed: its
 * `innerText` (hidden descendants left out, whitespace as laid out), or '' when the element itself
 * is not shown (`display: none` on it or an ancestor, `visibility: hidden`). Rejects when nothing
 * matches.
 */
export async function visibleText(page: Page, selector: string): Promise<string> {
  const text = await page.$eval(selector, (element) => {
    // The project's TypeScript lib has no DOM types: the element is typed by what is used.
    const shown = element as unknown as {
      innerText: string;
      checkVisibility(options: { visibilityProperty: boolean }): boolean;
    };
    return shown.checkVisibility({ visibilityProperty: true }) ? shown.innerText : '';
  });
  return text.trim();
}
