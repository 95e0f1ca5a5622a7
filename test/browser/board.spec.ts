/**
 * The ops board driven in headless Chromium, on Express and Fastify with a RedisStore: the pages
 * reached by the navigation, a lockout found and unlocked with the page's button (the script's
 * confirm() accepted or dismissed), the look-up box (no identity in a URL), the same with the
 * page's scripts disabled, read-only mode, and the script's refresh of a page's figures in place.
 * Each scenario starts without cookies (a first visit: the CSRF cookie is set by its first page).
 * It also pins that an unlocked key is not listed again as locked out by a later flush, and that a
 * refresh keeps a half-filled look-up form.
 * test/e2e/board/board.spec.ts covers the HTTP side (CSRF refusals, status codes) without a browser.
 */
import type { Redis } from 'ioredis';
import type { Browser, Dialog, Page } from 'puppeteer-core';
import { key64 } from '../../lib/board/board-pages';
import { attemptKey, RedisStore } from '../../lib/nest';
import { RedlimitBoard } from '../../lib/nest/board/redlimit-board.service';
import { boardApp, OPS_HEADER, OPS_TOKEN } from '../e2e/board/board.app';
import { PLATFORMS, type RunningApp, startApp } from '../e2e/support/app';
import {
  BROWSER_HOOK_TIMEOUT_MS,
  clickAndWait,
  describeBrowser,
  launchBrowser,
  visibleText,
  withPage,
} from '../support/browser';
import { createTestClient, uniquePrefix } from '../support/redis';

/** The fixture's `keySecret`: the board hashes identities with it, as the app does. */
const SECRET = 'a-key-secret-of-the-test-app';
/** The operator the audit should name (the fixture's `actor` reads `x-ops-user`). */
const OPERATOR = 'ada';
/** What an operator's browser sends: the fixture's authorize wants the token. */
const OPS_HEADERS = { [OPS_HEADER]: OPS_TOKEN, 'x-ops-user': OPERATOR };
const BOARD = '/ops/limits';

/** The navigation's links: name, and the path it leads to. */
const NAV: ReadonlyArray<readonly [string, string]> = [
  ['Policies', BOARD],
  ['Refusing now', `${BOARD}/refusing`],
  ['Locked out', `${BOARD}/locked`],
  ['A key', `${BOARD}/key`],
  ['Shadow', `${BOARD}/shadow`],
  ['Audit', `${BOARD}/audit`],
];

const UNLOCKED = 'Unlocked login for this key';

/** The selector of a navigation link. */
function navLink(name: string): string {
  const entry = NAV.find(([n]) => n === name);
  if (!entry) throw new Error(`no nav link ${name}`);
  return `header nav a[href="${entry[1]}"]`;
}

/** The selector of the Unlock button of `key` under the login policy (in a row or a key page). */
function unlockButton(key: string): string {
  return (
    `form[action="${BOARD}/unlock"]:has(input[name="policy"][value="login"])` +
    `:has(input[name="key64"][value="${key64(key)}"]) button[type="submit"]`
  );
}

/** The text of each row of the page's first table, cells joined by ' | '. */
function rowTexts(page: Page): Promise<string[]> {
  return page.$$eval('main table tbody tr', (rows) =>
    rows.map((row) =>
      (row as unknown as { innerText: string }).innerText.replace(/\s*\t\s*/g, ' | ').trim(),
    ),
  );
}

/** How many elements match `selector`. */
async function countOf(page: Page, selector: string): Promise<number> {
  return (await page.$$(selector)).length;
}

describeBrowser('ops board in Chromium', () => {
  let browser: Browser | undefined;
  let client: Redis | undefined;

  beforeAll(async () => {
    client = createTestClient();
    browser = await launchBrowser();
  }, BROWSER_HOOK_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await client?.quit();
  }, BROWSER_HOOK_TIMEOUT_MS);

  beforeEach(async () => {
    await browser!.deleteCookie(...(await browser!.cookies()));
  });

  /** A page of the operator's browser (the authorising headers on every request it makes). */
  function asOperator<T>(fn: (page: Page) => Promise<T>): Promise<T> {
    return withPage(browser!, async (page) => {
      await page.setExtraHTTPHeaders(OPS_HEADERS);
      return fn(page);
    });
  }

  async function open(page: Page, app: RunningApp, path = BOARD): Promise<void> {
    const response = await page.goto(`${app.url}${path}`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
  }

  /** Follows a navigation link and checks the page it leads to has that heading. */
  async function follow(page: Page, name: string): Promise<void> {
    const response = await clickAndWait(page, navLink(name));
    expect(response?.status()).toBe(200);
    expect(await visibleText(page, 'main h1')).toBe(name);
  }

  /** Wrong-password logins from Node; their statuses. */
  async function failLogins(app: RunningApp, email: string, times: number): Promise<number[]> {
    const codes: number[] = [];
    for (let i = 0; i < times; i++) {
      const response = await app.request('/login', {
        method: 'POST',
        body: { email, password: 'wrong' },
      });
      codes.push(response.status);
    }
    return codes;
  }

  /** Locks `email` out under the login policy (3/15m, then a block) and flushes the board. */
  async function lockOut(app: RunningApp, email: string): Promise<string> {
    expect(await failLogins(app, email, 4)).toEqual([201, 201, 201, 429]);
    await app.app.get(RedlimitBoard).flush();
    return attemptKey('email', email, SECRET);
  }

  describe.each(PLATFORMS)('on %s with a RedisStore', (platform) => {
    let running: RunningApp | undefined;
    let readOnly: RunningApp | undefined;

    beforeAll(async () => {
      const store = new RedisStore({ client: client!, prefix: uniquePrefix('board-browser') });
      running = await startApp(boardApp(store), platform);
      const readOnlyStore = new RedisStore({
        client: client!,
        prefix: uniquePrefix('board-browser-ro'),
      });
      readOnly = await startApp(boardApp(readOnlyStore, { readOnly: true }), platform);
    });

    afterAll(async () => {
      await running?.close();
      await readOnly?.close();
    });

    it('answers 403 to a browser without the operator header', async () => {
      await withPage(browser!, async (page) => {
        for (const [, path] of NAV) {
          const response = await page.goto(`${running!.url}${path}`, { waitUntil: 'load' });
          expect(response?.status()).toBe(403);
        }
        expect(await page.content()).not.toContain('<nav>');
      });
    });

    it('loads every page from the navigation, styled, with its heading', async () => {
      await asOperator(async (page) => {
        // Errors of the board's pages (the browser's own /favicon.ico request, a 404 of the app,
        // is none of the board's).
        const errors: string[] = [];
        const board = (url: string | undefined) => !url?.endsWith('/favicon.ico');
        page.on('pageerror', (error) => errors.push(String(error)));
        page.on('console', (message) => {
          if (message.type() === 'error' && board(message.location().url)) {
            errors.push(`${message.text()} (${message.location().url})`);
          }
        });
        page.on('response', (response) => {
          if (response.status() >= 400 && board(response.url())) {
            errors.push(`${response.status()} ${response.url()}`);
          }
        });

        await open(page, running!, `${BOARD}/audit`);
        for (const [name, path] of NAV) {
          await follow(page, name);
          expect(new URL(page.url()).pathname).toBe(path);
          expect(await visibleText(page, 'nav a[aria-current="page"]')).toBe(name);
        }
        // The stylesheet applied (served under the CSP with its type) and nothing was refused.
        const display = await page.$eval(
          'header',
          (el) =>
            (
              globalThis as unknown as {
                getComputedStyle(e: unknown): { display: string };
              }
            ).getComputedStyle(el).display,
        );
        expect(display).toBe('flex');
        expect(errors).toEqual([]);

        // The form token's cookie, as the browser keeps it: out of scripts' reach, same-site only.
        const csrf = (await browser!.cookies()).filter((c) => c.name === 'redlimit_board_csrf');
        expect(csrf).toHaveLength(1);
        expect(csrf[0]).toMatchObject({ path: BOARD, httpOnly: true, sameSite: 'Strict' });
        expect(await page.evaluate('document.cookie')).toBe('');
      });
    });

    it('shows the fixture’s policies on the Policies page', async () => {
      await asOperator(async (page) => {
        await open(page, running!, `${BOARD}/refusing`);
        await follow(page, 'Policies');
        const rows = await rowTexts(page);
        expect(rows.map((r) => r.split(' | ')[0])).toEqual([
          'login block 10m ×2 up to 1d',
          'preview shadow',
          'search',
        ]);
        const byName = (name: string) => rows.find((r) => r.startsWith(name)) ?? '';
        expect(byName('login')).toContain('fixed-window | 3/15m');
        expect(byName('search')).toContain('sliding-window | 2/1m');
        expect(byName('preview')).toContain('fixed-window | 1/1m');
      });
    });

    it('unlocks a locked-out email from its row, after confirm(), and audits the operator', async () => {
      const email = `locked-${platform}@example.com`;
      const key = await lockOut(running!, email);

      await asOperator(async (page) => {
        const dialogs: string[] = [];
        let answer: 'dismiss' | 'accept' = 'dismiss';
        page.on('dialog', (dialog: Dialog) => {
          dialogs.push(`${dialog.type()}: ${dialog.message()}`);
          void (answer === 'accept' ? dialog.accept() : dialog.dismiss());
        });

        await open(page, running!);
        await follow(page, 'Locked out');
        const row = (await rowTexts(page)).find((r) => r.includes(key));
        expect(row).toBeDefined();
        expect(row!.startsWith(`login | ${key} | 1 |`)).toBe(true);

        // Dismissed: the form is not sent, the page stays.
        await page.click(unlockButton(key));
        expect(dialogs).toEqual([
          'confirm: Reset login for this key? Its budget is full again and any lockout ends.',
        ]);
        expect(new URL(page.url()).pathname).toBe(`${BOARD}/locked`);

        answer = 'accept';
        const response = await clickAndWait(page, unlockButton(key));
        expect(response?.status()).toBe(200);
        expect(dialogs).toHaveLength(2);
        expect(await visibleText(page, 'main h1')).toBe('A key');
        expect(await visibleText(page, '.notice')).toContain(UNLOCKED);
        expect(await visibleText(page, 'main h2 .key')).toBe(key);

        expect(await failLogins(running!, email, 1)).toEqual([201]);

        await follow(page, 'Locked out');
        expect((await rowTexts(page)).filter((r) => r.includes(key))).toEqual([]);

        await follow(page, 'Audit');
        const unlocks = (await rowTexts(page)).filter((r) => r.includes(key));
        expect(unlocks).toHaveLength(1);
        expect(unlocks[0]).toMatch(
          new RegExp(` \\| ${OPERATOR} \\| unlock \\| board \\| login \\| `),
        );
      });
    });

    it('finds a locked-out key from an email typed in the look-up box, with no identity in the URL', async () => {
      const email = `look-up-${platform}@example.com`;
      const key = await lockOut(running!, email);
      const typed = `  LOOK-UP-${platform.toUpperCase()}@Example.COM `;

      await asOperator(async (page) => {
        const urls: string[] = [];
        page.on('request', (request) => urls.push(request.url()));

        await open(page, running!);
        await follow(page, 'A key');
        await page.select('form.lookup select[name="part"]', 'email');
        await page.type('form.lookup input[name="value"]', typed);
        const response = await clickAndWait(page, 'form.lookup button[type="submit"]');

        expect(response?.status()).toBe(200);
        expect(response?.request().method()).toBe('POST');
        expect(await visibleText(page, 'main h1')).toBe('A key');
        expect(await visibleText(page, 'main h2 .key')).toBe(key);
        expect(await visibleText(page, 'main table')).toContain('locked out until');

        for (const url of [page.url(), ...urls]) {
          const decoded = decodeURIComponent(url).toLowerCase();
          expect(decoded).not.toContain(email);
          expect(decoded).not.toContain(key.toLowerCase());
        }
        expect((await page.content()).toLowerCase()).not.toContain(email);
      });
    });

    it('grants a one-off allowance from a key’s page: units typed, confirm(), audited', async () => {
      const email = `grant-${platform}@example.com`;
      expect(await failLogins(running!, email, 2)).toEqual([201, 201]);
      const key = attemptKey('email', email, SECRET);
      const grantForm =
        `form[action="${BOARD}/grant"]:has(input[name="policy"][value="login"])` +
        `:has(input[name="key64"][value="${key64(key)}"])`;

      await asOperator(async (page) => {
        const dialogs: string[] = [];
        page.on('dialog', (dialog: Dialog) => {
          dialogs.push(dialog.message());
          void dialog.accept();
        });
        await open(page, running!);
        await follow(page, 'A key');
        await page.select('form.lookup select[name="part"]', 'email');
        await page.type('form.lookup input[name="value"]', email);
        await clickAndWait(page, 'form.lookup button[type="submit"]');
        expect(await visibleText(page, 'main table')).toContain('1 of 3 per 15m left');

        await page.click(`${grantForm} input[name="units"]`, { count: 3 });
        await page.type(`${grantForm} input[name="units"]`, '2');
        const response = await clickAndWait(page, `${grantForm} button[type="submit"]`);
        expect(response?.status()).toBe(200);
        expect(dialogs).toEqual([
          'Grant room under login to this key now? It can spend that many more units at once.',
        ]);
        expect(await visibleText(page, '.notice')).toContain(
          'Granted 2 units of room under login to this key',
        );
        expect(await visibleText(page, 'main table')).toContain('3 of 3 per 15m left');

        await follow(page, 'Audit');
        const grants = (await rowTexts(page)).filter((r) => r.includes(key));
        expect(grants).toHaveLength(1);
        expect(grants[0]).toMatch(
          new RegExp(` \\| ${OPERATOR} \\| grant \\| board \\| login \\| .* \\| 2 units$`),
        );
      });
    });

    it('renders and unlocks with the page’s scripts disabled (no confirm then)', async () => {
      const email = `no-script-${platform}@example.com`;
      const key = await lockOut(running!, email);

      await asOperator(async (page) => {
        await page.setJavaScriptEnabled(false);
        const dialogs: string[] = [];
        page.on('dialog', (dialog: Dialog) => {
          dialogs.push(dialog.message());
          void dialog.dismiss();
        });

        await open(page, running!);
        for (const [name] of NAV) await follow(page, name);

        await follow(page, 'Locked out');
        expect((await rowTexts(page)).some((r) => r.includes(key))).toBe(true);
        const response = await clickAndWait(page, unlockButton(key));

        expect(response?.status()).toBe(200);
        expect(dialogs).toEqual([]);
        expect(await visibleText(page, '.notice')).toContain(UNLOCKED);
        expect(await failLogins(running!, email, 1)).toEqual([201]);
        await follow(page, 'Locked out');
        expect((await rowTexts(page)).filter((r) => r.includes(key))).toEqual([]);
      });
    });

    it('shows no Unlock or Grant button in read-only mode, and says so', async () => {
      const email = `read-only-${platform}@example.com`;
      const key = await lockOut(readOnly!, email);

      await asOperator(async (page) => {
        await open(page, readOnly!);
        expect(await visibleText(page, 'header .mode')).toBe('read-only');

        await follow(page, 'Locked out');
        expect(await visibleText(page, 'header .mode')).toBe('read-only');
        expect((await rowTexts(page)).some((r) => r.includes(key))).toBe(true);
        expect(await countOf(page, `form[action="${BOARD}/unlock"]`)).toBe(0);

        // View leads to the key's page: its state, still no Unlock.
        const view =
          `form[action="${BOARD}/key"]:has(input[name="value"][value="${key64(key)}"]) ` +
          'button[type="submit"]';
        const response = await clickAndWait(page, view);
        expect(response?.status()).toBe(200);
        expect(await visibleText(page, 'main h2 .key')).toBe(key);
        expect(await visibleText(page, 'main table')).toContain('locked out until');
        expect(await countOf(page, `form[action="${BOARD}/unlock"]`)).toBe(0);
        expect(await countOf(page, `form[action="${BOARD}/grant"]`)).toBe(0);
        expect(await visibleText(page, 'header .mode')).toBe('read-only');
      });
    });
  });

  // What follows does not depend on the platform: one app, on Express, whose recorder writes only
  // when the spec flushes. The refresh tests wait for one refresh (every 10 s on these pages),
  // bounded by the harness's page timeout.
  describe('on express, the board written only when flushed', () => {
    let running: RunningApp | undefined;

    beforeAll(async () => {
      const store = new RedisStore({ client: client!, prefix: uniquePrefix('board-flushed') });
      running = await startApp(boardApp(store, { flushMs: 60_000 }), 'express');
    });

    afterAll(async () => {
      await running?.close();
    });

    // A lockout the recorder saw before an unlock but wrote after it (at its next flush) stays
    // off Locked out: the board remembers the unlock.
    it('keeps an unlocked key off Locked out though its lockout is written after', async () => {
      const email = 'unlocked-then-listed@example.com';
      const key = await lockOut(running!, email);
      expect(await failLogins(running!, email, 1)).toEqual([429]); // seen, not written yet

      await asOperator(async (page) => {
        page.on('dialog', (dialog: Dialog) => void dialog.accept());
        await open(page, running!, `${BOARD}/locked`);
        await clickAndWait(page, unlockButton(key));
        expect(await visibleText(page, '.notice')).toContain(UNLOCKED);
        expect(await failLogins(running!, email, 1)).toEqual([201]);

        await running!.app.get(RedlimitBoard).flush();
        await follow(page, 'Locked out');
        expect((await rowTexts(page)).filter((r) => r.includes(key))).toEqual([]);
      });
    });

    it('refreshes the Locked out page’s figures in place, without a navigation', async () => {
      await asOperator(async (page) => {
        const email = 'refreshed@example.com';
        const key = attemptKey('email', email, SECRET);
        await open(page, running!, `${BOARD}/locked`);
        expect((await rowTexts(page)).filter((r) => r.includes(key))).toEqual([]);

        await lockOut(running!, email);
        await nextRefresh(page);

        expect((await rowTexts(page)).some((r) => r.includes(key))).toBe(true);
        expect(await visibleText(page, 'main h1')).toBe('Locked out');
      });
    });

    // The refresh keeps the look-up form as it is: a value typed, then a part chosen in the
    // <select> (the focus now on it), survive the next refresh.
    it('keeps what is being entered in the look-up box across a refresh', async () => {
      await asOperator(async (page) => {
        await open(page, running!, `${BOARD}/refusing`);
        await page.type('form.lookup input[name="value"]', '203.0.113.7');
        await page.select('form.lookup select[name="part"]', 'ip');
        await page.focus('form.lookup select[name="part"]');
        await nextRefresh(page);

        expect(await valueOf(page, 'form.lookup select[name="part"]')).toBe('ip');
        expect(await valueOf(page, 'form.lookup input[name="value"]')).toBe('203.0.113.7');
      });
    });
  });
});

/**
 * Waits until the page's script has refreshed <main> once (its heading replaced), and checks the
 * page was not navigated meanwhile (a mark set on its window is still there).
 */
async function nextRefresh(page: Page): Promise<void> {
  await page.evaluate(
    "window.beforeRefresh = true; document.querySelector('main h1').setAttribute('data-old', '')",
  );
  await page.waitForFunction("document.querySelector('main h1[data-old]') === null");
  expect(await page.evaluate('window.beforeRefresh === true')).toBe(true);
}

/** A form control's current value. */
function valueOf(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (el) => (el as unknown as { value: string }).value);
}
