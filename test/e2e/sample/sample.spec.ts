/**
 * The sample app (sample/) as its users meet it: the sign-in flow and the links flow, booted from
 * its own AppModule with Redis from REDIS_URL, and a bad environment that stops it from booting.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { attemptKey } from '../../../lib/nest';
import { AppModule } from '../../../sample/app.module';
import { createTestClient, redisUrl, uniquePrefix } from '../../support/redis';
import { redlimit, removeBuiltCli } from '../cli/cli.process';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';

const ROOT = path.resolve(__dirname, '..', '..', '..');
afterAll(removeBuiltCli);

const ADA = { email: 'ada@example.com', password: 'correct horse battery staple' };
const ADMIN_TOKEN = 'sample admin token of at least 16 characters';

describe.each(PLATFORMS)('the sample app on %s', (platform) => {
  let app: RunningApp;
  const saved = { ...process.env };

  beforeEach(async () => {
    process.env.REDIS_URL = redisUrl();
    process.env.REDLIMIT_PREFIX = uniquePrefix('e2e-sample');
    app = await startApp(AppModule, platform);
  });
  afterEach(async () => {
    await app.close();
    process.env = { ...saved };
  });

  const signIn = (email: string, password: string) =>
    app.request('/auth/sign-in', { method: 'POST', body: { email, password } });

  it('sign-in: right passwords are free; five wrong ones lock the account and the IP, right password or not', async () => {
    for (let i = 0; i < 8; i++) {
      const ok = await signIn(ADA.email, ADA.password);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ user: 'ada@example.com' });
    }
    for (let i = 0; i < 5; i++) {
      expect((await signIn(i % 2 ? ' ADA@example.com' : ADA.email, 'guess')).status).toBe(401);
    }
    const locked = await signIn(ADA.email, ADA.password);
    expect(locked.status).toBe(429);
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1); // until the end of the aligned 15-minute window
    expect(retryAfter).toBeLessThanOrEqual(900);
    // The guard's app-wide default policy is described; the attempt's budget (shared with whoever
    // names the account) is not: only Retry-After says when to come back.
    expect(locked.headers.get('ratelimit')).toMatch(/^"api";r=\d+;t=\d+$/);
    expect(locked.headers.get('ratelimit-policy')).toBe('"api";q=100;w=60');
    expect(await locked.json()).toMatchObject({ statusCode: 429, policy: 'sign-in' });
    // The same IP is spent out too: guessing cannot move on to another account.
    expect((await signIn('grace@example.com', 'cobol forever')).status).toBe(429);
  });

  it('sign-in: the owner with a device token gets in while an attacker from other addresses keeps the account locked for everyone else', async () => {
    const first = await signIn(ADA.email, ADA.password);
    expect(first.status).toBe(200);
    const cookie = /^(redlimit_device\.[^=;]+=[^;]+);/.exec(
      first.headers.get('set-cookie') ?? '',
    )?.[1];
    expect(cookie).toBeDefined();
    const from = (ip: string, password: string, headers: Record<string, string> = {}) =>
      app.request('/auth/sign-in', {
        method: 'POST',
        headers: { 'x-forwarded-for': ip, ...headers },
        body: { email: ADA.email, password },
      });
    for (let i = 1; i <= 5; i++) expect((await from(`203.0.113.${i}`, 'guess')).status).toBe(401);
    expect((await from('203.0.113.6', 'guess')).status).toBe(429);
    const owner = '198.51.100.7';
    expect((await from(owner, ADA.password)).status).toBe(429); // no token: the account is locked
    const trusted = await from(owner, ADA.password, { cookie: cookie! });
    expect(trusted.status).toBe(200);
    expect(trusted.headers.get('set-cookie')).toMatch(/^redlimit_device\.[^=;]+=v1\./);
    // Still locked for everyone else, the owner's other browsers included.
    expect((await from(owner, ADA.password)).status).toBe(429);
    const forged = cookie!.slice(0, -1) + (cookie!.endsWith('A') ? 'B' : 'A');
    expect((await from(owner, ADA.password, { cookie: forged })).status).toBe(429);
  });

  it('reads REDLIMIT_KEY_SECRET: keys are HMACs with it; in production without it, a startup warning', async () => {
    const keySecret = () => app.logs.filter((line) => /warn: .*keySecret is not set/.test(line));
    expect(keySecret()).toEqual([]); // not production
    await app.close();
    process.env.NODE_ENV = 'production';
    app = await startApp(AppModule, platform);
    expect(keySecret()).toHaveLength(1);
    await app.close();

    const secret = 'sample secret of at least 16 characters';
    process.env.REDLIMIT_KEY_SECRET = secret;
    app = await startApp(AppModule, platform);
    expect(keySecret()).toEqual([]);
    expect((await signIn(ADA.email, 'guess')).status).toBe(401);
    const redis = createTestClient();
    try {
      const key = attemptKey('email', ADA.email, secret);
      expect(await redis.exists(`${process.env.REDLIMIT_PREFIX}{${key}}:sign-in:0`)).toBe(1);
    } finally {
      await redis.quit();
    }
  });

  it("says at startup which store it uses (Redis, with the URL's password masked)", () => {
    const port = new URL(redisUrl()).port;
    expect(app.logs).toContain(
      `log: Rate limits are kept in Redis at redis://127.0.0.1:${port}, prefix '${process.env.REDLIMIT_PREFIX}'`,
    );
  });

  it("the README's unlock works on the running sample: its admin route, and the CLI reading sample/redlimit.env", async () => {
    await app.close();
    process.env.REDLIMIT_SAMPLE_ADMIN_TOKEN = ADMIN_TOKEN;
    app = await startApp(AppModule, platform);
    const lock = async () => {
      for (let i = 0; i < 5; i++) expect((await signIn(ADA.email, 'guess')).status).toBe(401);
      expect((await signIn(ADA.email, ADA.password)).status).toBe(429);
    };
    await lock();
    const unlock = await app.request('/auth/unlock', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: { email: ADA.email, ip: '127.0.0.1' },
    });
    expect(unlock.status).toBe(200);
    expect(await unlock.json()).toEqual({ unlocked: ['email', 'ip'] });
    expect((await signIn(ADA.email, ADA.password)).status).toBe(200);

    await lock();
    // As the README says: npm run redlimit -- reset sign-in email=… ip=… --dotenv sample/redlimit.env
    const run = await redlimit(
      ['reset', 'sign-in', `email=${ADA.email}`, 'ip=127.0.0.1', '--dotenv', 'sample/redlimit.env'],
      { REDIS_URL: redisUrl(), REDLIMIT_PREFIX: process.env.REDLIMIT_PREFIX! },
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^reset sign-in for 2 keys:/);
    expect((await signIn(ADA.email, ADA.password)).status).toBe(200);
  });

  it('links: ten per minute per client, then 429; /health is never limited', async () => {
    for (let i = 0; i < 10; i++) {
      const created = await app.request('/links', {
        method: 'POST',
        body: { url: `https://example.com/${i}` },
      });
      expect(created.status).toBe(201);
      // 'links' stacks on the app-wide default 'api': one decision, both listed.
      expect(created.headers.get('ratelimit')).toMatch(
        new RegExp(`^"api";r=\\d+;t=\\d+, "links";r=${9 - i};t=\\d+$`),
      );
    }
    const refused = await app.request('/links', {
      method: 'POST',
      body: { url: 'https://example.com/x' },
    });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ policy: 'links' });

    const list = await app.request('/links');
    expect(list.status).toBe(200);
    expect(await list.json()).toHaveLength(10);
    expect(list.headers.get('ratelimit-policy')).toBe('"api";q=100;w=60');

    for (let i = 0; i < 5; i++) {
      const health = await app.request('/health');
      expect(await health.json()).toEqual({ status: 'ok', rateLimitStore: 'redis' });
      expect(health.headers.get('ratelimit')).toBeNull();
    }
  });
  it('completions: a token budget per API key reserves max_tokens and settles to the tokens used', async () => {
    const complete = (apiKey: string, body: Record<string, unknown>) =>
      app.request('/completions', { method: 'POST', headers: { 'x-api-key': apiKey }, body });
    const first = await complete('sample-key-1', {
      prompt: 'hello rate limited world',
      max_tokens: 4000,
    });
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({
      text: 'hello rate limited world',
      usage: { reserved: 4000, total_tokens: 9 },
    });
    // The reservation was settled to 9: 9,991 of 10,000 are left, so 9,991 can be reserved…
    const all = await complete('sample-key-1', { prompt: 'again', max_tokens: 9991 });
    expect(all.status).toBe(201);
    expect(await all.json()).toMatchObject({ usage: { reserved: 9991, total_tokens: 3 } });
    // …and settled to 3: 9,988 left. A reservation of 9,989 does not fit.
    const over = await complete('sample-key-1', { prompt: 'one more', max_tokens: 9989 });
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ policy: 'tokens' });
    expect((await complete('sample-key-1', { prompt: 'fits', max_tokens: 9988 })).status).toBe(201);
    // Another API key has a budget of its own; a max_tokens that is not a whole number within
    // the budget is the request's fault (400), and charges nothing.
    expect((await complete('sample-key-2', { prompt: 'x', max_tokens: 10000 })).status).toBe(201);
    for (const bad of ['many', 0, 2.5, 10001]) {
      const refused = await complete('sample-key-3', { prompt: 'x', max_tokens: bad });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        message: expect.stringMatching(/^cost must be/) as unknown,
      });
    }
    expect((await complete('sample-key-3', { prompt: 'x', max_tokens: 10000 })).status).toBe(201);
  });
  // Behind a proxy on the same host (nginx, a sidecar) every request comes from 127.0.0.1: an
  // unlock answered "only on this machine" was answered to anyone, who could unlock any account
  // (and the attacker's own address) after every 5 guesses, forever.
  it('unlock needs the admin token (REDLIMIT_SAMPLE_ADMIN_TOKEN), whatever the source address; off when unset', async () => {
    const unlock = (headers: Record<string, string>) =>
      app.request('/auth/unlock', {
        method: 'POST',
        headers,
        body: { email: ADA.email, ip: '127.0.0.1' },
      });
    const lock = async () => {
      for (let i = 0; i < 5; i++) await signIn(ADA.email, 'guess');
      expect((await signIn(ADA.email, ADA.password)).status).toBe(429);
    };
    await lock();
    // Unset: off, even from 127.0.0.1 (this request's own address), even with a token.
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${ADMIN_TOKEN}` },
    ];
    for (const headers of attempts) {
      const off = await unlock(headers);
      expect(off.status).toBe(403);
      expect(await off.json()).toMatchObject({
        message: expect.stringMatching(/REDLIMIT_SAMPLE_ADMIN_TOKEN/) as unknown,
      });
    }
    expect((await signIn(ADA.email, ADA.password)).status).toBe(429);

    await app.close();
    process.env.REDLIMIT_SAMPLE_ADMIN_TOKEN = ADMIN_TOKEN;
    app = await startApp(AppModule, platform);
    await lock();
    const forged: Array<Record<string, string>> = [
      {},
      { 'x-forwarded-for': '127.0.0.1' },
      { authorization: 'Bearer ' },
      { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${ADMIN_TOKEN}x` },
      { authorization: ADMIN_TOKEN },
      { authorization: `Basic ${ADMIN_TOKEN}` },
    ];
    for (const headers of forged) {
      expect((await unlock(headers)).status).toBe(403);
    }
    expect((await signIn(ADA.email, ADA.password)).status).toBe(429);
    const ok = await unlock({ authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(ok.status).toBe(200);
    expect((await signIn(ADA.email, ADA.password)).status).toBe(200);
  });

  it('a REDLIMIT_SAMPLE_ADMIN_TOKEN shorter than 16 characters stops startup, naming the variable and not the value', async () => {
    await app.close();
    process.env.REDLIMIT_SAMPLE_ADMIN_TOKEN = 'short-token';
    await expect(startApp(AppModule, platform)).rejects.toThrow(
      /^REDLIMIT_SAMPLE_ADMIN_TOKEN must be at least 16 characters \(it has 11\)$/,
    );
    delete process.env.REDLIMIT_SAMPLE_ADMIN_TOKEN;
    app = await startApp(AppModule, platform);
  });

  // An unvalidated API key is a budget of the caller's choosing: a fresh invented key per
  // request was a fresh 10,000-token budget. Keys the sample does not know are charged by IP.
  it("completions: invented API keys share the client IP's budget (a fresh key per request mints nothing)", async () => {
    const complete = (apiKey: string, maxTokens: number) =>
      app.request('/completions', {
        method: 'POST',
        headers: { 'x-api-key': apiKey },
        body: { prompt: 'x', max_tokens: maxTokens },
      });
    const codes = [];
    for (let i = 0; i < 5; i++) {
      codes.push((await complete(`k${Math.random().toString(36).slice(2)}`, 4000)).status);
    }
    // Five invented keys settled 3 tokens each, all from the client IP's 10,000: a sixth
    // invented key cannot reserve 9,990 (a fresh budget would have held it).
    const reserved = await complete(`k${Math.random()}`, 9990);
    expect(codes).toEqual([201, 201, 201, 201, 201]);
    expect(reserved.status).toBe(429);
    expect(await reserved.json()).toMatchObject({ policy: 'tokens' });
    // A key the sample knows has its own budget, untouched by the invented ones.
    expect((await complete('sample-key-1', 10_000)).status).toBe(201);
  });
});

describe('the sample app process', () => {
  it('fails to boot on a bad REDLIMIT_POLICIES, naming the variable', async () => {
    const root = ROOT;
    const child = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'sample/main.ts'],
      {
        cwd: root,
        env: {
          ...process.env,
          TS_NODE_PROJECT: 'sample/tsconfig.json',
          REDLIMIT_POLICIES: 'sign-in=fixed-window:5/15 minutes',
          PORT: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).not.toBe(0);
    expect(output).toMatch(/REDLIMIT_POLICIES="sign-in=fixed-window:5\/15 minutes" is invalid/);
  }, 20_000);

  it('listens on 127.0.0.1 by default, on HOST when set', async () => {
    for (const [host, expected] of [
      [undefined, '127.0.0.1'],
      ['127.0.0.2', '127.0.0.2'],
    ] as const) {
      const child = spawn(
        process.execPath,
        ['-r', 'ts-node/register/transpile-only', 'sample/main.ts'],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            TS_NODE_PROJECT: 'sample/tsconfig.json',
            PORT: '0',
            ...(host !== undefined && { HOST: host }),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let output = '';
          const read = (d: Buffer) => {
            output += d.toString();
            const match = /listening on (http:\/\/\S+?):? /.exec(output);
            if (match) resolve(match[1]!);
          };
          child.stdout.on('data', read);
          child.stderr.on('data', read);
          child.on('close', () => reject(new Error(`the sample exited:\n${output}`)));
        });
        expect(new URL(url).hostname).toBe(expected);
        expect((await fetch(`${url}/health`)).status).toBe(200);
      } finally {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('close', resolve));
      }
    }
  }, 40_000);

  it('the CLI reads the policies and prefix of sample/redlimit.env (no Redis needed)', async () => {
    const run = await redlimit(['policies', '--json', '--dotenv', 'sample/redlimit.env']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({
      prefix: 'sample:',
      policies: [
        { name: 'sign-in', algorithm: 'fixed-window', limits: [{ limit: 5, windowMs: 900_000 }] },
        { name: 'links', algorithm: 'sliding-window', limits: [{ limit: 10, windowMs: 60_000 }] },
        {
          name: 'tokens',
          algorithm: 'fixed-window',
          limits: [{ limit: 10_000, windowMs: 3_600_000 }],
        },
        { name: 'api', algorithm: 'sliding-window', failMode: 'open' },
      ],
    });
    const missing = await redlimit(['policies', '--dotenv', 'sample/nope.env']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^redlimit: --dotenv sample\/nope\.env: cannot read it/);
  });
});
