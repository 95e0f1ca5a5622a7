/**
 * Attacks on the ops board over HTTP, on Express and Fastify: authorisation by path spelling,
 * method and `authorize`'s answer; CSRF (fields, bodies, Sec-Fetch-Site / Origin a browser could
 * send); markup from caller keys an attacker chooses; what a cross-site page can read; keys the
 * board lists but cannot act on; shutdown with a hung Redis; a key's unlock from a real browser.
 *
 * Failing specs are holes (see each title); the others pin defences that held.
 */
import { request as httpRequest } from 'node:http';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  HttpCode,
  type INestApplication,
  Injectable,
  Module,
  Post,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import {
  MemoryStore,
  type RedlimitBoardOptions,
  RedlimitBoardModule,
  RedlimitGuard,
  RedlimitModule,
  type RedlimitModuleOptions,
  Throttle,
} from '../../../lib/nest';
import { RedlimitBoard } from '../../../lib/nest/board/redlimit-board.service';
import {
  BROWSER_HOOK_TIMEOUT_MS,
  describeBrowser,
  launchBrowser,
  visibleText,
  withPage,
} from '../../support/browser';
import { startFreezableRedis } from '../../support/freezable-redis';
import { redisUrl, uniquePrefix } from '../../support/redis';
import { type CliIo, runCli } from '../../../lib/cli/redlimit.cli';
import { collectingLogger, type Platform, PLATFORMS } from '../support/app';

jest.setTimeout(60_000);

const OPS = { 'x-ops-token': 'let-me-in' };

/** The request object both adapters hand to `authorize`. */
type AnyRequest = { headers: Record<string, string | undefined> };

/** Whether the request is the operator's: the header, or the session cookie of a browser. */
const isOps = (req: unknown): boolean => {
  const { headers } = req as AnyRequest;
  return (
    headers['x-ops-token'] === 'let-me-in' || /(^|; )session=ops(;|$)/.test(headers.cookie ?? '')
  );
};

@Controller()
class TaggedController {
  /** Keyed by a body field the client chooses (a custom key function, as apps write them). */
  @Post('tagged')
  @HttpCode(200)
  @UseGuards(RedlimitGuard)
  @Throttle('tagged', {
    key: (ctx: ExecutionContext) =>
      `tag:${String((ctx.switchToHttp().getRequest<{ body?: { tag?: unknown } }>().body ?? {}).tag)}`,
  })
  tagged(): string {
    return 'ok';
  }
}

/** An app with a route keyed by the client, a lockout on it, and the board at /ops/limits. */
function reviewApp(
  board: Partial<RedlimitBoardOptions> = {},
  module: Partial<RedlimitModuleOptions> = {},
): Type {
  @Module({
    imports: [
      RedlimitModule.forRoot({
        ...(module.redis === undefined && { store: new MemoryStore() }),
        keySecret: 'a-key-secret-of-the-review-app',
        policies: {
          tagged: {
            algorithm: 'fixed-window',
            limit: 1,
            window: '1m',
            block: { duration: '10m' },
          },
        },
        ...module,
      }),
      RedlimitBoardModule.forRoot({
        path: '/ops/limits',
        authorize: isOps,
        flushMs: 100,
        ...board,
      }),
    ],
    controllers: [TaggedController],
  })
  class ReviewBoardModule {}
  return ReviewBoardModule;
}

interface Running {
  readonly app: INestApplication;
  readonly url: string;
  close(): Promise<void>;
}

/** Boots `module` on the platform (after `configure`, e.g. enableCors) on a free port. */
async function start(
  module: Type,
  platform: Platform,
  configure: (app: INestApplication) => void = () => undefined,
): Promise<Running> {
  const options = { logger: collectingLogger([]), abortOnError: false };
  const app =
    platform === 'express'
      ? await NestFactory.create(module, new ExpressAdapter(), options)
      : await NestFactory.create(module, new FastifyAdapter(), options);
  configure(app);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return { app, url, close: () => app.close() };
}

/** A raw HTTP/1.1 request (any method, any request-target, any headers). */
function raw(
  base: string,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: target, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Makes `tag`'s key locked out: one allowed request, then a refusal that starts the lockout. */
async function lockOut(running: Running, tag: string): Promise<number[]> {
  const codes: number[] = [];
  for (let i = 0; i < 2; i++) codes.push(await tagged(running, tag));
  await running.app.get(RedlimitBoard).flush();
  return codes;
}

async function tagged(running: Running, tag: string): Promise<number> {
  const response = await fetch(`${running.url}/tagged`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag }),
  });
  await response.text();
  return response.status;
}

/** A GET of a board page as the operator: its body, and the CSRF cookie and token it carries. */
async function page(running: Running, route = '') {
  const response = await fetch(`${running.url}/ops/limits${route}`, { headers: OPS });
  const body = await response.text();
  const cookie = response.headers.get('set-cookie')?.split(';')[0] ?? '';
  const csrf = /name="csrf" value="([^"]+)"/.exec(body)?.[1] ?? '';
  return { status: response.status, headers: response.headers, body, cookie, csrf };
}

/** A form POST to a board route as the operator. */
async function post(
  running: Running,
  route: string,
  form: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const response = await fetch(`${running.url}/ops/limits/${route}`, {
    method: 'POST',
    headers: { ...OPS, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: form,
  });
  return { status: response.status, body: await response.text() };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe.each(PLATFORMS)('ops board under attack on %s', (platform) => {
  describe('an app keyed by what the client sends', () => {
    let running: Running;
    beforeAll(async () => {
      running = await start(reviewApp(), platform);
    });
    afterAll(() => running.close());

    it('lets no request that authorize refuses reach a page, an asset or an action, whatever its spelling or method (defence holds)', async () => {
      const paths = [
        '/ops/limits',
        '/ops/limits/',
        '/OPS/LIMITS',
        '/ops/limits/refusing/',
        '/ops/limits/%72efusing',
        '/ops/limits/Locked',
        '/ops/limits/assets/board.js',
        '/ops/limits/assets/board.css',
        '/ops/limits/key',
        '/ops/limits/unlock',
        '/ops/limits/audit?minutes=1',
      ];
      for (const method of ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'DELETE', 'PATCH']) {
        for (const path of paths) {
          const { status, body } = await raw(running.url, method, path, {
            'content-type': 'application/x-www-form-urlencoded',
          });
          expect([method, path, status]).toEqual([method, path, status === 404 ? 404 : 403]);
          expect(body).not.toContain('redlimit_board_csrf');
        }
      }
    });

    it('escapes HTML, quotes and backticks of a caller key on every page that shows it, forms and data-confirm included (defence holds)', async () => {
      const payload = `"><img src=x onerror=alert(1)>'\`<script>alert(2)</script><svg onload=alert(3)>&amp;`;
      expect(await lockOut(running, payload)).toEqual([200, 429]);
      const key = `tag:${payload}`;
      for (const route of ['/refusing', '/locked']) {
        const { body } = await page(running, route);
        expect(body).toContain(
          'tag:&#34;&#62;&#60;img src=x onerror=alert(1)&#62;&#39;&#96;&#60;script&#62;',
        );
        expect(body).not.toContain('<img src=x');
        expect(body).not.toContain('<script>alert');
        expect(body).not.toContain('<svg onload');
        expect(body).toContain('data-confirm="Reset tagged for this key?');
      }
      const { cookie, csrf } = await page(running, '/key');
      const view = await post(running, 'key', form({ part: 'key', value: key, csrf }), { cookie });
      expect(view.status).toBe(200);
      expect(view.body).toContain('locked out until');
      expect(view.body).not.toContain('<img src=x');
      const unknown = await post(
        running,
        'key',
        form({ part: `<b>${payload}`, value: 'x', csrf }),
        {
          cookie,
        },
      );
      expect(unknown.body).not.toContain('<b>');
      expect(unknown.body).not.toContain('<img src=x');
      const policy = await post(
        running,
        'unlock',
        form({ policy: `<i>${payload}`, key: `<u>${payload}`, csrf }),
        { cookie },
      );
      expect(policy.body).not.toContain('<i>');
      expect(policy.body).not.toContain('<u>');
      expect(policy.body).not.toContain('<img src=x');
    });

    it('sends the security headers, and puts no identity or key in any link or form action (defence holds)', async () => {
      await lockOut(running, 'alice@example.com');
      for (const route of ['', '/refusing', '/locked', '/key', '/shadow', '/audit']) {
        const { status, headers, body } = await page(running, route);
        expect(status).toBe(200);
        expect(headers.get('cache-control')).toBe('no-store');
        expect(headers.get('x-frame-options')).toBe('DENY');
        expect(headers.get('referrer-policy')).toBe('no-referrer');
        expect(headers.get('content-security-policy')).toContain("script-src 'self'");
        expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
        for (const [, href] of body.matchAll(/href="([^"]*)"/g)) {
          expect(href).toMatch(
            /^\/ops\/limits(\/(refusing|locked|key|shadow|audit|assets\/board\.css)(\?minutes=(1|5|15|30))?)?$/,
          );
        }
        for (const [tag] of body.matchAll(/<form[^>]*>/g)) {
          expect(tag).toMatch(/method="post"/);
          expect(tag).toMatch(/action="\/ops\/limits\/(key|unlock|grant|override|override-clear)"/);
        }
      }
    });

    it('refuses an unlock without a matching token, or from another site, however the form is spelled (defence holds)', async () => {
      const tag = 'csrf-victim';
      expect(await lockOut(running, tag)).toEqual([200, 429]);
      const key = `tag:${tag}`;
      const { cookie, csrf } = await page(running, '/locked');
      const wrong = 'w'.repeat(43);
      const attempts: Array<[string, string, Record<string, string>]> = [
        ['no cookie', form({ policy: 'tagged', key, csrf }), {}],
        ['no field', form({ policy: 'tagged', key }), { cookie }],
        ['empty field', form({ policy: 'tagged', key, csrf: '' }), { cookie }],
        [
          'wrong first of two',
          `policy=tagged&key=${encodeURIComponent(key)}&csrf=${wrong}&csrf=${csrf}`,
          { cookie },
        ],
        [
          'wrong in an array',
          `policy=tagged&key=${encodeURIComponent(key)}&csrf[]=${wrong}`,
          { cookie },
        ],
        ['an object', `policy=tagged&key=${encodeURIComponent(key)}&csrf[a]=${csrf}`, { cookie }],
        [
          'cross-site',
          form({ policy: 'tagged', key, csrf }),
          { cookie, 'sec-fetch-site': 'cross-site' },
        ],
        [
          'same-site subdomain',
          form({ policy: 'tagged', key, csrf }),
          { cookie, 'sec-fetch-site': 'same-site' },
        ],
        [
          'another origin, no Sec-Fetch-Site',
          form({ policy: 'tagged', key, csrf }),
          { cookie, origin: 'https://evil.example' },
        ],
        [
          'sandboxed iframe (Origin: null)',
          form({ policy: 'tagged', key, csrf }),
          { cookie, origin: 'null' },
        ],
        [
          'a subdomain, no Sec-Fetch-Site',
          form({ policy: 'tagged', key, csrf }),
          { cookie, origin: 'http://evil.127.0.0.1.nip.io' },
        ],
      ];
      for (const [name, body, headers] of attempts) {
        const answer = await post(running, 'unlock', body, headers);
        expect([name, answer.status]).toEqual([name, 403]);
      }
      // A cross-site script's JSON (it would need a CORS preflight; Sec-Fetch-Site says so anyway).
      const json = await fetch(`${running.url}/ops/limits/unlock`, {
        method: 'POST',
        headers: {
          ...OPS,
          cookie,
          'content-type': 'application/json',
          'sec-fetch-site': 'cross-site',
        },
        body: JSON.stringify({ policy: 'tagged', key, csrf }),
      });
      expect(json.status).toBe(403);
      expect(
        (
          await raw(
            running.url,
            'GET',
            `/ops/limits/unlock?policy=tagged&key=${key}&csrf=${csrf}`,
            { ...OPS, cookie },
          )
        ).status,
      ).toBe(404);
      expect(await tagged(running, tag)).toBe(429); // still locked out
      const unlocked = await post(running, 'unlock', form({ policy: 'tagged', key, csrf }), {
        cookie,
        'sec-fetch-site': 'same-origin',
      });
      expect(unlocked.status).toBe(200);
      expect(await tagged(running, tag)).toBe(200);
    });

    it('lets on-call view and unlock a long key it lists (400 characters), and lists a longer one shortened, without actions', async () => {
      const tag = `long-${'k'.repeat(400)}`;
      expect(await lockOut(running, tag)).toEqual([200, 429]);
      const key = `tag:${tag}`;
      const listed = await page(running, '/locked');
      expect(listed.body).toContain(key); // listed, with View and Unlock buttons
      expect(listed.body).toMatch(/>\s*Unlock\s*</);
      const { cookie, csrf } = listed;
      const view = await post(running, 'key', form({ part: 'key', value: key, csrf }), { cookie });
      expect(view.body).toContain('locked out until');
      const unlock = await post(running, 'unlock', form({ policy: 'tagged', key, csrf }), {
        cookie,
      });
      expect(unlock.body).toContain('Unlocked tagged for this key');
      expect(await tagged(running, tag)).toBe(200);

      // 3,000 characters: the board keeps its start and a digest (its memory stays bounded).
      const huge = `huge-${'h'.repeat(3_000)}`;
      expect(await lockOut(running, huge)).toEqual([200, 429]);
      const shortened = await page(running, '/locked');
      expect(shortened.body).not.toContain(`tag:${huge}`);
      expect(shortened.body).toContain(`tag:${huge.slice(0, 196)}`);
      expect(shortened.body).toContain('shortened: too long to act on');
    });

    it('makes links and forms from the board’s own path, not from the request-target a client sent (absolute-form)', async () => {
      const { status, body } = await raw(
        running.url,
        'GET',
        'http://evil.example/ops/limits/refusing',
        OPS,
      );
      expect(status).toBe(200);
      expect(body).not.toContain('evil.example'); // links, script src, form actions
    });
  });

  describe('authorize', () => {
    it.each<[string, (req: unknown) => unknown]>([
      ['a truthy object', () => ({ user: 'ops' })],
      ["the string 'true'", () => 'true'],
      ['1', () => 1],
      [
        'a throw',
        () => {
          throw new Error('no session');
        },
      ],
      ['a rejection', () => Promise.reject(new Error('no session'))],
      ['an async false', () => Promise.resolve(false)],
    ])(
      'answers 403 when it returns %s: only `true` lets in (defence holds)',
      async (_name, authorize) => {
        const running = await start(
          reviewApp({ authorize: authorize as RedlimitBoardOptions['authorize'] }),
          platform,
        );
        try {
          for (const path of ['/ops/limits', '/ops/limits/assets/board.js']) {
            expect((await fetch(`${running.url}${path}`)).status).toBe(403);
          }
        } finally {
          await running.close();
        }
      },
    );

    it('lets an async `true` in, and runs a guard class as the board’s guard (defence holds)', async () => {
      @Injectable()
      class OpsGuard implements CanActivate {
        canActivate(context: ExecutionContext): boolean {
          return isOps(context.switchToHttp().getRequest());
        }
      }
      for (const authorize of [(req: unknown) => Promise.resolve(isOps(req)), OpsGuard]) {
        const running = await start(reviewApp({ authorize }), platform);
        try {
          expect((await fetch(`${running.url}/ops/limits`)).status).toBe(403);
          expect((await fetch(`${running.url}/ops/limits`, { headers: OPS })).status).toBe(200);
        } finally {
          await running.close();
        }
      }
    });
  });

  describe('an app with a global prefix', () => {
    it('serves the board under it: links, forms and the CSRF cookie’s path follow, and an unlock works (defence holds)', async () => {
      const running = await start(reviewApp(), platform, (app) => app.setGlobalPrefix('api'));
      try {
        const response = await fetch(`${running.url}/tagged`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"tag":"p"}',
        });
        expect(response.status).toBe(404); // the route moved under /api too
        for (let i = 0; i < 2; i++) {
          await fetch(`${running.url}/api/tagged`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"tag":"p"}',
          });
        }
        await running.app.get(RedlimitBoard).flush();
        expect((await fetch(`${running.url}/ops/limits`, { headers: OPS })).status).toBe(404);
        const locked = await fetch(`${running.url}/api/ops/limits/locked`, { headers: OPS });
        const body = await locked.text();
        const setCookie = locked.headers.get('set-cookie')!;
        expect(setCookie).toContain('Path=/api/ops/limits;');
        expect(body).toContain('action="/api/ops/limits/unlock"');
        const csrf = /name="csrf" value="([^"]+)"/.exec(body)![1]!;
        const unlock = await fetch(`${running.url}/api/ops/limits/unlock`, {
          method: 'POST',
          headers: {
            ...OPS,
            cookie: setCookie.split(';')[0]!,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: form({ policy: 'tagged', key: 'tag:p', csrf }),
        });
        expect(unlock.status).toBe(200);
      } finally {
        await running.close();
      }
    });
  });

  describe('an app with CORS open to any origin, with credentials (app.enableCors)', () => {
    let running: Running;
    beforeAll(async () => {
      running = await start(reviewApp(), platform, (app) =>
        app.enableCors({ origin: true, credentials: true }),
      );
    });
    afterAll(() => running.close());

    it('does not let a cross-site script read a board page with the operator’s session', async () => {
      await lockOut(running, 'bob@example.com');
      // What Chromium sends for fetch('https://app/ops/limits/locked', { credentials: 'include' })
      // from a page of evil.example, with a SameSite=None session cookie.
      const response = await fetch(`${running.url}/ops/limits/locked`, {
        headers: {
          cookie: 'session=ops',
          origin: 'https://evil.example',
          'sec-fetch-site': 'cross-site',
          'sec-fetch-mode': 'cors',
          'sec-fetch-dest': 'empty',
        },
      });
      const body = await response.text();
      const readable =
        response.status === 200 &&
        response.headers.get('access-control-allow-origin') === 'https://evil.example' &&
        response.headers.get('access-control-allow-credentials') === 'true';
      // Readable: the keys refused and locked out, the audit's operators, and a CSRF token.
      expect({ readable, listsKey: body.includes('tag:bob@example.com') }).toEqual({
        readable: false,
        listsKey: false,
      });
    });
  });

  describe('on a Redis that hangs (SIGSTOP)', () => {
    it('closes the app (app.close()) while Redis does not answer, as it does without the board', async () => {
      const redis = await startFreezableRedis();
      try {
        const running = await start(
          reviewApp({}, { redis: redis.server.url, prefix: uniquePrefix('board-close') }),
          platform,
        );
        expect(await tagged(running, 'x')).toBe(200);
        const closed = await redis.whileHung(() =>
          Promise.race([
            running.close().then(() => 'closed'),
            // A liveness bound, not a timing assertion: the module's own client closes within
            // its timeout; the board's last flush waits on Redis with none.
            new Promise((resolve) => setTimeout(() => resolve('still closing'), 15_000).unref()),
          ]),
        );
        expect(closed).toBe('closed');
      } finally {
        await redis.stop();
      }
    });
  });
});

describeBrowser('ops board in Chromium: a key with a line break', () => {
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, BROWSER_HOOK_TIMEOUT_MS);
  afterAll(() => browser?.close(), BROWSER_HOOK_TIMEOUT_MS);

  it.each(PLATFORMS)(
    '%s: Unlock on its Locked out row unlocks that key, not another',
    async (platform) => {
      const running = await start(reviewApp(), platform);
      try {
        // The key is the client's: a body field with a line feed (JSON allows it).
        const tag = 'line\nbreak';
        expect(await lockOut(running, tag)).toEqual([200, 429]);
        const notice = await withPage(browser, async (tab) => {
          await tab.setExtraHTTPHeaders(OPS);
          tab.on('dialog', (dialog) => void dialog.accept());
          await tab.goto(`${running.url}/ops/limits/locked`);
          await Promise.all([
            tab.waitForNavigation({ waitUntil: 'load' }),
            tab.click('form[action="/ops/limits/unlock"] button'),
          ]);
          return visibleText(tab, '.notice');
        });
        expect(notice).toContain('Unlocked tagged for this key');
        // The form carries the key as base64url (a browser sends a field's LF as CRLF): the
        // board reset, and audited, `tag:line\nbreak` itself, shown with its line feed visible.
        const audit = await fetch(`${running.url}/ops/limits/audit`, { headers: OPS });
        expect(await audit.text()).toContain('tag:line\\u{a}break');
        expect(await tagged(running, tag)).toBe(200);
      } finally {
        await running.close();
      }
    },
  );
});

describe('redlimit board (the CLI)', () => {
  /** Starts `redlimit board` in this process; resolves once it printed its login link. */
  async function serve(args: readonly string[]) {
    const controller = new AbortController();
    let out = '';
    let printed!: () => void;
    const ready = new Promise<void>((resolve) => (printed = resolve));
    const write = (text: string) => {
      out += text;
      if (out.includes('open http')) printed();
    };
    const io: CliIo = {
      env: {},
      stdout: { write },
      stderr: { write },
      signal: controller.signal,
    };
    const done = runCli(
      ['board', '--port', '0', '--redis', redisUrl(), '--prefix', uniquePrefix('cli'), ...args],
      io,
    );
    await Promise.race([ready, done.then(() => Promise.reject(new Error(out)))]);
    return {
      out: () => out,
      login: /open (\S+)/.exec(out)![1]!,
      stop: () => {
        controller.abort();
        return done;
      },
    };
  }

  it('signs in from the login link only: the token leaves the URL, its cookie is HttpOnly and SameSite=Strict, another local origin cannot act (defence holds)', async () => {
    const board = await serve(['--token', 'a-sixteen-char-token-for-review']);
    try {
      const signIn = await fetch(board.login, { redirect: 'manual' });
      expect(signIn.status).toBe(303);
      expect(signIn.headers.get('location')).toBe('/');
      const setCookie = signIn.headers.get('set-cookie')!;
      expect(setCookie).toMatch(/HttpOnly/);
      expect(setCookie).toMatch(/SameSite=Strict/);
      const origin = new URL(board.login).origin;
      const cookie = setCookie.split(';')[0]!;
      const page = await fetch(`${origin}/key`, { headers: { cookie } });
      const csrfCookie = page.headers.get('set-cookie')!.split(';')[0]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
      // A page of another port of 127.0.0.1 is same-site (cookies ignore ports): refused.
      const fromAnotherPort = await fetch(`${origin}/unlock`, {
        method: 'POST',
        headers: {
          cookie: `${cookie}; ${csrfCookie}`,
          'content-type': 'application/x-www-form-urlencoded',
          'sec-fetch-site': 'same-site',
          origin: 'http://127.0.0.1:3000',
        },
        body: new URLSearchParams({ policy: 'login', key: 'user:x', csrf }).toString(),
      });
      expect(fromAnotherPort.status).toBe(403);
      expect((await fetch(`${origin}/locked?token=wrong-token-of-16-chars`)).status).toBe(403);
    } finally {
      expect(await board.stop()).toBe(0);
    }
  });

  it('warns when --host serves the board beyond this machine (plain HTTP: the token and its cookie travel in clear)', async () => {
    const board = await serve(['--host', '0.0.0.0']);
    try {
      expect(board.login).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/\?token=/);
      expect(board.out()).toMatch(/warn/i);
    } finally {
      expect(await board.stop()).toBe(0);
    }
  });
});
