// Screenshots of the ops board for the documentation (docs/board/*.png):
//
//   npx ts-node --transpile-only scripts/board-screenshots.ts
//
// Boots a small shop app on Express (sign-in under @Attempt with lockouts, a search route by client
// IP behind a proxy on the same host, an API by API key, a shadow limit on exports) with the board
// at /ops/limits, plays about 15 minutes of traffic (users signing in, a few addresses stuffed with
// wrong passwords until they are locked out, scrapers from several IPs, a noisy API client, an
// operator's unlock), then opens each page in headless Chromium at 1280×800 and saves it.
//
// The store is a MemoryStore whose clock the script moves on, so the traffic spreads over the
// Policies page's 15 minutes in a few seconds. With REDIS_URL set it runs on that Redis instead
// (under a prefix of its own, left to expire): Redis keeps its own time, so all the traffic then
// lands in the last minute. Chromium: REDLIMIT_CHROMIUM_BIN, else /usr/bin/chromium.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Body, Controller, Get, Module, Post, UseGuards, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import Redis from 'ioredis';
import { launch, type Page } from 'puppeteer-core';
import {
  Attempt,
  attemptKey,
  MemoryStore,
  RedisStore,
  RedlimitBoard,
  RedlimitBoardModule,
  RedlimitGuard,
  RedlimitModule,
  type Store,
  Throttle,
} from '../lib/nest';

const OUT_DIR = path.resolve(__dirname, '..', 'docs', 'board');
const BOARD = '/ops/limits';
const TOKEN_HEADER = 'x-ops-token';
const TOKEN = randomBytes(16).toString('hex');
const KEY_SECRET = randomBytes(32).toString('base64url');
const VIEWPORT = { width: 1280, height: 800 };
/** Simulated time: 90 steps of 10 s (the Policies page's 15 minutes). */
const STEPS = 90;
const STEP_MS = 10_000;

@Controller()
class ShopController {
  /** A password that is not 'right' is a failure: it costs; a success is refunded. */
  @Post('login')
  login(
    @Body() body: { email?: string; password?: string },
    @Attempt(['email'], { policy: 'login' }) attempt: Attempt,
  ): { ok: boolean } {
    if (body.password === 'right') {
      attempt.refund();
      return { ok: true };
    }
    return { ok: false };
  }

  @Get('search')
  @UseGuards(RedlimitGuard)
  @Throttle('search')
  search(): string {
    return 'results';
  }

  @Get('api/orders')
  @UseGuards(RedlimitGuard)
  @Throttle('api', { by: 'apiKey' })
  orders(): string {
    return '[]';
  }

  @Post('export')
  @UseGuards(RedlimitGuard)
  @Throttle('export')
  export(): string {
    return 'queued';
  }
}

function shopModule(store: Store): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        store,
        keySecret: KEY_SECRET,
        // A proxy on the same host names the client in X-Forwarded-For.
        clientIp: { trustedProxies: ['loopback'] },
        policies: {
          login: {
            algorithm: 'fixed-window',
            limit: 5,
            window: '15m',
            block: { duration: '10m', factor: 2 },
          },
          search: { algorithm: 'sliding-window', limit: 30, window: '1m' },
          api: { algorithm: 'token-bucket', limit: 120, window: '1m', burst: 20 },
          export: { algorithm: 'fixed-window', limit: 3, window: '1m', shadow: true },
        },
      }),
      RedlimitBoardModule.forRoot({
        path: BOARD,
        authorize: (req) => headerOf(req, TOKEN_HEADER) === TOKEN,
        actor: (req) => headerOf(req, 'x-ops-user'),
        flushMs: 60_000,
      }),
    ],
    controllers: [ShopController],
  })
  class ShopModule {}
  return ShopModule;
}

function headerOf(req: unknown, name: string): string | undefined {
  const value = (req as { headers: Record<string, string | string[] | undefined> }).headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A small seeded generator (mulberry32): the same traffic on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const USERS = [
  'amelia.ross@example.com',
  'noah.baker@example.org',
  'li.wei@example.net',
  'fatima.haddad@example.com',
  'lucas.silva@example.com',
  'sofia.rossi@example.org',
  'kenji.sato@example.com',
  'ines.martin@example.net',
];
/** Addresses stuffed with wrong passwords, and the step each attack starts at. */
const TARGETS: ReadonlyArray<readonly [string, number]> = [
  ['maria.garcia@example.com', 2],
  ['j.okafor@example.org', 40],
  ['admin@example.com', 58],
  ['olivia.chen@example.net', 66],
  ['m.dubois@example.com', 84],
];
const VISITORS = Array.from({ length: 12 }, (_, i) => `198.51.100.${20 + i * 7}`);
/** Scrapers of the search route: address, first and last step, requests per step. */
const SCRAPERS: ReadonlyArray<readonly [string, number, number, number]> = [
  ['203.0.113.7', 20, 70, 9],
  ['203.0.113.54', 60, 89, 7],
  ['2001:db8:4a1:9c::1f', 45, 89, 6],
  ['192.0.2.201', 78, 89, 12],
];
const API_KEYS = ['sk_live_4f1a9c', 'sk_live_77b2e0', 'sk_live_c93d18'];

async function main(): Promise<void> {
  let offsetMs = process.env.REDIS_URL ? 0 : -STEPS * STEP_MS;
  let redis: Redis | undefined;
  let store: Store;
  if (process.env.REDIS_URL) {
    redis = new Redis(process.env.REDIS_URL);
    store = new RedisStore({
      client: redis,
      prefix: `screenshots:${randomBytes(4).toString('hex')}:`,
    });
  } else {
    store = new MemoryStore({ clock: () => Date.now() + offsetMs });
  }

  const app = await NestFactory.create(shopModule(store), new ExpressAdapter(), {
    logger: ['error', 'warn'],
  });
  try {
    await app.listen(0, '127.0.0.1');
    const url = (await app.getUrl())
      .replace('[::1]', '127.0.0.1')
      .replace('localhost', '127.0.0.1');
    await playTraffic(url, app.get(RedlimitBoard), (ms) => (offsetMs = ms));
    await shootPages(url);
  } finally {
    await app.close();
    await redis?.quit();
  }
}

/**
 * About 15 minutes of traffic, in steps of 10 s (each flushed to the board): `moveClock` sets the
 * memory store's clock offset (no-op on Redis) from -15 min up to 0.
 */
async function playTraffic(
  url: string,
  board: RedlimitBoard,
  moveClock: (offsetMs: number) => void,
): Promise<void> {
  const ops = { [TOKEN_HEADER]: TOKEN };
  const call = (route: string, init: RequestInit & { ip: string }) =>
    fetch(`${url}${route}`, {
      ...init,
      headers: { 'x-forwarded-for': init.ip, ...(init.headers as Record<string, string>) },
    }).then((response) => response.status);
  const login = (email: string, password: string, ip: string) =>
    call('/login', {
      method: 'POST',
      ip,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });

  /** An unlock from the board, as an operator's browser sends it (CSRF cookie and token). */
  async function unlock(actor: string, email: string): Promise<void> {
    const headers = { ...ops, 'x-ops-user': actor };
    const page = await fetch(`${url}${BOARD}/locked`, { headers });
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const key = attemptKey('email', email, KEY_SECRET);
    const response = await fetch(`${url}${BOARD}/unlock`, {
      method: 'POST',
      headers: { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, policy: 'login', key }).toString(),
    });
    if (response.status !== 200) throw new Error(`unlock answered ${response.status}`);
  }

  const next = random(20_240_601);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  for (let step = 0; step < STEPS; step++) {
    const calls: Promise<number>[] = [];
    // Ordinary traffic, busier in the middle of the quarter hour.
    const busy = 1 + Math.sin((step / STEPS) * Math.PI);
    for (let i = 0; i < Math.round(busy * 4 + next() * 4); i++) {
      calls.push(call('/search', { ip: pick(VISITORS) }));
    }
    if (next() < 0.35) {
      const user = pick(USERS);
      const ip = pick(VISITORS);
      if (next() < 0.3) calls.push(login(user, 'wrong', ip));
      calls.push(login(user, 'right', ip));
    }
    for (const key of API_KEYS) {
      const noisy = key === API_KEYS[1] && step > 30 && step < 75;
      const burst = Math.round(noisy ? 24 + next() * 14 : next() * 6);
      for (let i = 0; i < burst; i++) {
        calls.push(call('/api/orders', { ip: '192.0.2.10', headers: { 'x-api-key': key } }));
      }
    }
    if (next() < 0.5) calls.push(call('/export', { method: 'POST', ip: pick(VISITORS) }));
    if (step > 50) calls.push(call('/export', { method: 'POST', ip: '203.0.113.54' }));
    // Scrapers.
    for (const [ip, from, to, perStep] of SCRAPERS) {
      if (step < from || step > to) continue;
      for (let i = 0; i < perStep; i++) calls.push(call('/search', { ip }));
    }
    await Promise.all(calls);
    // Credential stuffing, one wrong password after another: a lockout after the 5th.
    for (const [email, from] of TARGETS) {
      if (step >= from && step < from + 4) {
        await login(email, 'wrong', '203.0.113.99');
        await login(email, 'wrong', '203.0.113.99');
      }
    }
    // The first target is tried again once its first lockout (10 min) is over: locked out for 20.
    if (step === 66) {
      for (let i = 0; i < 6; i++) await login(TARGETS[0]![0], 'wrong', '203.0.113.99');
    }

    await board.flush();
    // Operators unlock two addresses. After the flush: a lockout the recorder saw before an unlock
    // but wrote after it would be listed again (with its old end) though the key is unlocked.
    if (step === 72) await unlock('ada@ops.example.com', TARGETS[1]![0]);
    if (step === 86) await unlock('grace@ops.example.com', TARGETS[4]![0]);
    moveClock((step + 1 - STEPS) * STEP_MS);
  }
  await board.flush();
}

/** Opens each page in Chromium at 1280×800 and saves it into docs/board/. */
async function shootPages(url: string): Promise<void> {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const browser = await launch({
    executablePath: process.env.REDLIMIT_CHROMIUM_BIN || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--hide-scrollbars'],
    defaultViewport: VIEWPORT,
  });
  try {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ [TOKEN_HEADER]: TOKEN, 'x-ops-user': 'ada@ops.example.com' });
    const shoot = async (name: string) => {
      const file = `${path.join(OUT_DIR, name)}.png` as const;
      await page.screenshot({ path: file });
      process.stdout.write(
        `${path.relative(process.cwd(), file)} (${fs.statSync(file).size} bytes)\n`,
      );
    };
    const open = async (route: string) => {
      const response = await page.goto(`${url}${BOARD}${route}`, { waitUntil: 'load' });
      if (response?.status() !== 200) throw new Error(`${route} answered ${response?.status()}`);
    };

    await open('');
    await shoot('policies');
    await open('/refusing?minutes=15');
    await shoot('refusing');
    await open('/locked');
    await shoot('locked');
    await open('/key');
    await lookUp(page, 'email', '  Maria.Garcia@Example.com ');
    await shoot('key');
    await open('/shadow?minutes=15');
    await shoot('shadow');
    await open('/audit');
    await shoot('audit');
  } finally {
    await browser.close();
  }
}

/** Types a value into the look-up box of the current page and submits it. */
async function lookUp(page: Page, part: string, value: string): Promise<void> {
  await page.select('form.lookup select[name="part"]', part);
  await page.type('form.lookup input[name="value"]', value);
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load' }),
    page.click('form.lookup button[type="submit"]'),
  ]);
  // Leave the focus off the box, as after a click elsewhere.
  await page.evaluate('document.activeElement && document.activeElement.blur()');
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
