import { RedisStore } from '../../../lib';
import { attemptKey, LimiterRegistry } from '../../../lib/nest';
import { until } from '../../support/until';
import { startFreezableRedis } from '../../support/freezable-redis';
import { createTestClient, redisUrl, uniquePrefix } from '../../support/redis';
import { getFreePort } from '../../support/redis-server';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { cliApp, PASSWORD } from './cli.app';
import { CLI_HANG_MS, redlimit, removeBuiltCli } from './cli.process';

jest.setTimeout(60_000);
afterAll(removeBuiltCli);

const POLICIES = 'login=sliding-window:3/15m,links=sliding-window:2/1h';
const KEY_SECRET = 'a secret of at least 16 characters';
const DAY_MS = 86_400_000;

interface PeekJson {
  policy: string;
  allowed: boolean;
  retryAfterMs: number;
  keys: Array<{ input: string; key: string; allowed: boolean; remaining: number; limit: number }>;
}

/** The environment of one app and of the commands run against it. */
function environment(): Record<string, string> {
  return {
    REDIS_URL: redisUrl(),
    REDLIMIT_PREFIX: uniquePrefix('cli'),
    REDLIMIT_POLICIES: POLICIES,
    REDLIMIT_KEY_SECRET: KEY_SECRET,
    REDLIMIT_TRUSTED_PROXIES: 'loopback', // X-Forwarded-For stands for distinct clients
    REDLIMIT_DEVICES_TTL: '7d', // trusted devices on (signed with the key secret)
    REDLIMIT_OVERRIDES_POLL_MS: '100', // live limits checked every 100 ms
  };
}

describe.each(PLATFORMS)('redlimit command against a %s app', (platform) => {
  let env: Record<string, string>;
  let app: RunningApp;
  beforeEach(async () => {
    env = environment();
    app = await startApp(cliApp(env), platform);
  });
  afterEach(() => app.close());

  const signIn = (from: string, password: string, email = 'alice@example.com') =>
    app.request('/sign-in', {
      method: 'POST',
      headers: { 'x-forwarded-for': from },
      body: { email, password },
    });

  it('reset unlocks an account an attacker locked, typed as the email, not its hash', async () => {
    const attacker = '203.0.113.7';
    const owner = '198.51.100.4';
    for (let i = 0; i < 3; i++) expect((await signIn(attacker, 'guess')).status).toBe(401);
    expect((await signIn(owner, PASSWORD)).status).toBe(429); // locked: the email's budget is spent

    const peek = await redlimit(
      ['peek', 'login', 'email= Alice@Example.COM', `ip=${owner}`, '--json'],
      env,
    );
    expect(peek).toMatchObject({ code: 0, stderr: '' });
    const before = JSON.parse(peek.stdout) as PeekJson;
    expect(before).toMatchObject({ policy: 'login', allowed: false });
    expect(before.retryAfterMs).toBeGreaterThan(0);
    expect(before.keys.map((k) => [k.allowed, k.remaining, k.limit])).toEqual([
      [false, 0, 3],
      [true, 3, 3],
    ]);
    expect(before.keys[0]!.key).toMatch(/^email:[\w-]{22}$/);
    expect(before.keys[0]!.key).not.toMatch(/alice/i);

    const reset = await redlimit(['reset', 'login', 'email=alice@example.com'], env);
    expect(reset).toMatchObject({ code: 0, stderr: '' });
    expect(reset.stdout).toContain(before.keys[0]!.key);

    expect((await signIn(owner, PASSWORD)).status).toBe(200);
    // Only the email was reset: the attacker's IP keeps its spent budget.
    expect((await signIn(attacker, 'guess', 'bob@example.com')).status).toBe(429);
    const after = JSON.parse(
      (await redlimit(['peek', 'login', `ip=${attacker}`, '--json'], env)).stdout,
    ) as PeekJson;
    expect(after.keys[0]).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('grant gives a locked-out-by-count owner exactly N more attempts, and both actions are audited', async () => {
    const attacker = '203.0.113.7';
    const owner = '198.51.100.4';
    for (let i = 0; i < 3; i++) expect((await signIn(attacker, 'guess')).status).toBe(401);
    expect((await signIn(owner, 'wrong')).status).toBe(429);

    const granted = await redlimit(
      ['grant', 'login', 'email=alice@example.com', '--units', '2', '--json'],
      env,
    );
    expect(granted).toMatchObject({ code: 0, stderr: '' });
    const body = JSON.parse(granted.stdout) as {
      policy: string;
      units: number;
      granted: unknown[];
    };
    expect(body).toMatchObject({ policy: 'login', units: 2 });
    expect(body.granted).toHaveLength(1);

    expect((await signIn(owner, 'wrong')).status).toBe(401);
    expect((await signIn(owner, 'wrong')).status).toBe(401);
    expect((await signIn(owner, PASSWORD)).status).toBe(429); // two, no more

    expect((await redlimit(['reset', 'login', 'email=alice@example.com'], env)).code).toBe(0);
    const client = createTestClient();
    try {
      const audit = await new RedisStore({ client, prefix: env.REDLIMIT_PREFIX! })
        .board()
        .audit(10);
      const key = attemptKey('email', 'alice@example.com', KEY_SECRET, { normalize: true });
      expect(audit.map((e) => [e.action, e.via, e.policy, e.key, e.detail])).toEqual([
        ['unlock', 'cli', 'login', key, undefined],
        ['grant', 'cli', 'login', key, '2 units'],
      ]);
      expect(audit[0]!.actor).toMatch(/^cli/);
    } finally {
      await client.quit();
    }
  });

  it('grant: missing or bad units are usage errors, before Redis is touched', async () => {
    const noRedis = { ...env, REDIS_URL: 'redis://127.0.0.1:1' };
    for (const [argv, message] of [
      [['grant', 'login', 'email=a@example.com'], 'grant needs --units N'],
      [
        ['grant', 'login', 'email=a@example.com', '--units', '0'],
        '--units "0": expected a whole number ≥ 1',
      ],
      [['grant', 'login', 'email=a@example.com', '--units', '2.5'], '--units "2.5"'],
      [['reset', 'login', 'email=a@example.com', '--units', '2'], '--units is for grant only'],
    ] as const) {
      const run = await redlimit([...argv], noRedis);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
    }
  });

  it('policies set raises a limit on the running app within its poll, list and history show it, unset restores it', async () => {
    const registry = app.app.get(LimiterRegistry);
    const get = (path: string, ip: string) =>
      app.request(path, { headers: { 'x-forwarded-for': ip } });
    const set = await redlimit(
      [
        'policies',
        'set',
        'links',
        '--limit',
        '4',
        '--until',
        '2h',
        '--reason',
        'launch day',
        '--json',
      ],
      env,
    );
    expect(set).toMatchObject({ code: 0, stderr: '' });
    const { override } = JSON.parse(set.stdout) as { override: { version: number } };
    // In force on the app within its poll (100 ms; the bound here is generous).
    await until(() => registry.liveLimits!.version >= override.version, 10_000);
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(`/links/${i}`, '192.0.2.1')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);

    const list = await redlimit(['policies', 'list'], env);
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout).toMatch(
      /^links\s+\(every key\)\s+\{"limit":4\}\s+until \S+\s+v\d+\s+cli\S*\s+launch day$/m,
    );

    const unset = await redlimit(['policies', 'unset', 'links', '--reason', 'over'], env);
    expect(unset).toMatchObject({ code: 0, stderr: '' });
    await until(() => registry.liveLimits!.version > override.version, 10_000);
    const after = [];
    for (let i = 0; i < 3; i++) after.push((await get(`/links/${i}`, '192.0.2.2')).status);
    expect(after).toEqual([200, 200, 429]);

    const history = await redlimit(['policies', 'history', '--json'], env);
    const entries = (JSON.parse(history.stdout) as { history: Array<Record<string, unknown>> })
      .history;
    expect(entries.map((e) => [e.action, e.policy, e.reason])).toEqual([
      ['unset', 'links', 'over'],
      ['set', 'links', 'launch day'],
    ]);
    expect(String(entries[0]!.actor)).toMatch(/^cli/);
  });

  it('policies set: a bad change is refused before Redis is touched, with the policy’s message', async () => {
    const noRedis = { ...env, REDIS_URL: 'redis://127.0.0.1:1' };
    for (const [argv, message] of [
      [['policies', 'set', 'links'], 'policies set needs a change'],
      [['policies', 'set', 'links', '--limit', '0'], '--limit "0": expected a whole number ≥ 1'],
      [
        ['policies', 'set', 'links', '--limits', '5/1d'],
        'limits[0].window cannot change at runtime',
      ],
      [
        ['policies', 'set', 'links', '--burst', '5'],
        "burst applies to 'token-bucket' and 'gcra' only",
      ],
      [['policies', 'set', 'nope', '--limit', '5'], "no policy named 'nope'"],
      [['policies', 'set', 'links', '--limit', '5', '--until', 'tomorrow'], '--until "tomorrow"'],
      [['policies', 'unset', 'links', '--limit', '5'], '--limit is for policies unset only'],
      [['peek', 'links', '--scope', 'x'], '--scope is for policies set, unset and history only'],
    ] as const) {
      const run = await redlimit([...argv], noRedis);
      expect(run.stderr).toContain(message);
      expect(run.code).toBe(2);
    }
  });

  it('revoke-devices: a device token that let the owner into a locked account no longer does', async () => {
    const attacker = '203.0.113.7';
    const owner = '198.51.100.4';
    const trustedSignIn = (from: string, password: string, cookie?: string) =>
      app.request('/trusted-sign-in', {
        method: 'POST',
        headers: { 'x-forwarded-for': from, ...(cookie !== undefined && { cookie }) },
        body: { email: 'alice@example.com', password },
      });
    const first = await trustedSignIn(owner, PASSWORD);
    expect(first.status).toBe(200);
    const cookie = first.headers
      .getSetCookie()
      .map((line) => line.split(';')[0]!)
      .find((pair) => /^redlimit_device\.[^=]+=v1\./.test(pair));
    expect(cookie).toBeDefined();

    for (let i = 0; i < 3; i++) expect((await trustedSignIn(attacker, 'guess')).status).toBe(401);
    expect((await trustedSignIn(owner, PASSWORD)).status).toBe(429); // the account is locked
    expect((await trustedSignIn(owner, PASSWORD, cookie)).status).toBe(200); // its device is not

    const run = await redlimit(['revoke-devices', 'email= Alice@Example.COM', '--json'], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({
      revoked: [
        {
          input: 'email= Alice@Example.COM',
          key: attemptKey('email', 'alice@example.com', KEY_SECRET),
          epoch: 1,
        },
      ],
      keptMs: 366 * DAY_MS,
    });

    // The token issued before is no token now: charged to the locked account.
    expect((await trustedSignIn(owner, PASSWORD, cookie)).status).toBe(429);
  });

  it('peek and reset reach the default @Throttle key (handler + route template + client IP)', async () => {
    expect((await app.request('/links/1')).status).toBe(200);
    expect((await app.request('/links/2')).status).toBe(200);
    expect((await app.request('/links/3')).status).toBe(429);
    const route = ['--route', 'CliAppController.link /links/:id', '--ip', '127.0.0.1'];

    const peek = await redlimit(['peek', 'links', ...route, '--json'], env);
    expect(peek).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(peek.stdout)).toMatchObject({
      allowed: false,
      keys: [{ key: 'CliAppController.link /links/:id|ip:127.0.0.1', remaining: 0, limit: 2 }],
    });

    expect((await redlimit(['reset', 'links', ...route], env)).code).toBe(0);
    expect((await app.request('/links/4')).status).toBe(200);
    // The old method-based form says what changed instead of addressing nothing.
    const old = await redlimit(
      ['peek', 'links', '--route', 'GET /links/:id', '--ip', '127.0.0.1'],
      env,
    );
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/default @Throttle keys name the handler, not the HTTP method/);
  });
});

describe('redlimit command', () => {
  const env = environment();

  /** One line on stderr, no stack trace, nothing on stdout. */
  const expectOneLineError = (run: { stdout: string; stderr: string }, pattern: RegExp) => {
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^redlimit: [^\n]+\n$/);
    expect(run.stderr).toMatch(pattern);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  };

  it('peek shows the budget left per key, in words', async () => {
    const run = await redlimit(['peek', 'login', 'email=carol@example.com'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^login \(sliding-window 3\/15m\)\n/);
    expect(run.stdout).toMatch(/email=carol@example\.com +email:\S{22} +3 of 3 left\n/);
  });

  it('revoke-devices bumps the device epoch of each login under the prefix, kept 366 days', async () => {
    const client = createTestClient();
    try {
      const store = new RedisStore({ client, prefix: env.REDLIMIT_PREFIX! });
      const dave = attemptKey('email', 'dave@example.com', KEY_SECRET);
      const erin = attemptKey('email', 'erin@example.com', KEY_SECRET);
      // Tokens bind the login's hash, whatever the part is named.
      const epochOf = async (key: string) =>
        (await store.readEpoch(`devices:${key.slice('email:'.length)}`, DAY_MS)).epoch;
      expect(await epochOf(dave)).toBe(0);
      expect(await epochOf(erin)).toBe(0);

      const run = await redlimit(['revoke-devices', 'email=Dave@Example.com', '--key', erin], env);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(
        /^revoked the trusted devices of 2 logins \(epochs kept 366d\):\n/,
      );
      expect(run.stdout).toMatch(new RegExp(`email=Dave@Example\\.com +${dave} +epoch 1\n`));
      expect(run.stdout).toMatch(new RegExp(`--key ${erin} +${erin} +epoch 1\n?$`));
      expect(await epochOf(dave)).toBe(1);
      expect(await epochOf(erin)).toBe(1);
      // Kept 366 days (the longest a token can live), not the 1 day the reads above asked for.
      const ttl = await client.pttl(
        `${env.REDLIMIT_PREFIX!}epoch:{devices:${dave.slice('email:'.length)}}`,
      );
      expect(ttl).toBeGreaterThan(365 * DAY_MS);
      expect(ttl).toBeLessThanOrEqual(366 * DAY_MS);

      const again = await redlimit(['revoke-devices', 'email=dave@example.com', '--json'], env);
      expect(JSON.parse(again.stdout)).toMatchObject({ revoked: [{ key: dave, epoch: 2 }] });
    } finally {
      client.disconnect();
    }
  });

  it('revoke-devices refuses what names no login with exit 2, before Redis is contacted', async () => {
    const closed = { ...env, REDIS_URL: `redis://127.0.0.1:${await getFreePort()}` };
    const refused: Array<[string[], RegExp] | [string[], RegExp, Record<string, string>]> = [
      [[], /revoke-devices needs at least one login/],
      [['login', 'email=alice@example.com'], /bad login 'login'.*takes no policy name/],
      [['ip=203.0.113.7'], /'ip' is not a login/],
      [
        ['body.email=alice@example.com'],
        /name the part by its key name.*email=…, not body\.email=…/,
      ],
      [['email= '], /bad login 'email= ': empty value/],
      [['--key', 'email:-'], /--key 'email:-' is not a login key/],
      [['--route', 'AuthController.signIn /sign-in', '--ip', '203.0.113.7'], /--route and --ip/],
    ];
    for (const [args, pattern, extra] of refused) {
      const run = await redlimit(['revoke-devices', ...args], { ...closed, ...extra });
      expect([args, run.code]).toEqual([args, 2]);
      expectOneLineError(run, pattern);
    }
  });

  it('revoke-devices exits 3 when Redis fails, saying which logins were revoked before', async () => {
    const client = createTestClient();
    try {
      const gina = attemptKey('email', 'gina@example.com', KEY_SECRET);
      // Something else under the second login's epoch key: its INCR fails.
      await client.hset(
        `${env.REDLIMIT_PREFIX!}epoch:{devices:${gina.slice('email:'.length)}}`,
        'x',
        '1',
      );
      const run = await redlimit(
        ['revoke-devices', 'email=hank@example.com', 'email=gina@example.com'],
        env,
      );
      expect(run.code).toBe(3);
      expectOneLineError(
        run,
        /Redis failed for email=gina@example\.com: .*WRONGTYPE.*\(revoked before it: email=hank@example\.com\)/,
      );
      const unreachable = await redlimit(['revoke-devices', 'email=hank@example.com'], {
        ...env,
        REDIS_URL: `redis://127.0.0.1:${await getFreePort()}`,
      });
      expect(unreachable.code).toBe(3);
      expectOneLineError(unreachable, /cannot reach Redis at .*ECONNREFUSED/);
    } finally {
      client.disconnect();
    }
  });

  it('policies lists the policies of REDLIMIT_POLICIES, without contacting Redis', async () => {
    const run = await redlimit(['policies', '--json'], {
      ...env,
      REDIS_URL: 'redis://:hunter2@127.0.0.1:1',
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      redis: 'redis://:***@127.0.0.1:1',
      prefix: env.REDLIMIT_PREFIX,
      policies: [
        {
          name: 'login',
          algorithm: 'sliding-window',
          limits: [{ limit: 3, windowMs: 900_000 }],
          failMode: 'closed',
        },
        {
          name: 'links',
          algorithm: 'sliding-window',
          limits: [{ limit: 2, windowMs: 3_600_000 }],
          failMode: 'closed',
        },
      ],
    });
  });

  it('a password pasted unencoded into the URL stays masked', async () => {
    for (const [url, shown] of [
      ['redis://:p@ss@127.0.0.1:1', 'redis://:***@127.0.0.1:1'],
      ['redis://u:pa/ss@127.0.0.1:1', 'redis://u:***@127.0.0.1:1'],
    ]) {
      const run = await redlimit(['policies', '--json'], { ...env, REDIS_URL: url! });
      expect(run.code).toBe(0);
      expect((JSON.parse(run.stdout) as { redis: string }).redis).toBe(shown);
      expect(run.stdout).not.toMatch(/p@ss|pa\/ss/);
    }
    const closed = await getFreePort();
    const run = await redlimit(['reset', 'login', 'email=alice@example.com'], {
      ...env,
      REDIS_URL: `redis://:p@ss@127.0.0.1:${closed}`,
    });
    expect(run.code).toBe(3);
    expectOneLineError(
      run,
      new RegExp(`cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${closed}: `),
    );
  });

  it('an unknown policy exits 2 naming the known ones, before Redis is contacted', async () => {
    const closed = `redis://127.0.0.1:${await getFreePort()}`;
    const run = await redlimit(['reset', 'logn', 'email=alice@example.com'], {
      ...env,
      REDIS_URL: closed,
    });
    expect(run.code).toBe(2);
    expectOneLineError(run, /no policy named 'logn'; known policies: login, links/);
  });

  it('a bad key exits 2 saying what a key looks like', async () => {
    const run = await redlimit(['peek', 'login', 'alice@example.com'], env);
    expect(run.code).toBe(2);
    expectOneLineError(run, /bad key 'alice@example\.com': expected part=value/);
    const ip = await redlimit(['reset', 'login', 'ip=not-an-ip'], env);
    expect(ip.code).toBe(2);
    expectOneLineError(ip, /'not-an-ip' is not an IP address/);
  });

  it('an unreachable Redis exits 3 with one line', async () => {
    const closed = `redis://127.0.0.1:${await getFreePort()}`;
    const run = await redlimit(['reset', 'login', 'email=alice@example.com'], {
      ...env,
      REDIS_URL: closed,
    });
    expect(run.code).toBe(3);
    expectOneLineError(run, /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
  });

  it('a Redis that hangs exits 3 once --timeout has passed, instead of hanging', async () => {
    const redis = await startFreezableRedis();
    try {
      const run = await redis.whileHung(() =>
        redlimit(['peek', 'login', 'email=alice@example.com', '--timeout', '300'], {
          ...env,
          REDIS_URL: redis.server.url,
        }),
      );
      expect(run.code).toBe(3);
      expectOneLineError(run, /no answer within 300 ms/);
      expect(run.ms).toBeLessThan(CLI_HANG_MS);
    } finally {
      await redis.stop();
    }
  });

  it('a bad environment variable exits 2 naming it', async () => {
    const run = await redlimit(['policies'], {
      ...env,
      REDLIMIT_POLICIES: 'login=fixed-window:ten/15m',
    });
    expect(run.code).toBe(2);
    expectOneLineError(run, /REDLIMIT_POLICIES="login=fixed-window:ten\/15m" is invalid/);
  });

  it('without Redis configured, peek exits 2 saying which variable to set', async () => {
    const withoutRedis = Object.fromEntries(
      Object.entries(env).filter(([name]) => name !== 'REDIS_URL'),
    );
    const run = await redlimit(['peek', 'login', 'email=alice@example.com'], withoutRedis);
    expect(run.code).toBe(2);
    expectOneLineError(run, /no Redis configured: set REDLIMIT_REDIS_URL or REDIS_URL/);
  });

  it('usage: --help exits 0; no command or an unknown option exits 2', async () => {
    const help = await redlimit(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: redlimit <command>/);
    const none = await redlimit([]);
    expect(none.code).toBe(2);
    expectOneLineError(none, /no command given/);
    const unknown = await redlimit(['peek', 'login', 'email=a', '--frobnicate']);
    expect(unknown.code).toBe(2);
    expectOneLineError(unknown, /Unknown option '--frobnicate'/);
  });
});

describe('redlimit command without Nest', () => {
  afterEach(() => {
    for (const name of ['@nestjs/common', '@nestjs/core']) jest.dontMock(name);
    jest.resetModules();
  });

  it('loads with only the core installed (no @nestjs package)', () => {
    jest.isolateModules(() => {
      for (const name of ['@nestjs/common', '@nestjs/core']) {
        jest.doMock(name, () => {
          throw new Error(`Cannot find module '${name}'`);
        });
      }
      const cli = jest.requireActual<typeof import('../../../lib/cli/redlimit.cli')>(
        '../../../lib/cli/redlimit.cli',
      );
      expect(typeof cli.runCli).toBe('function');
    });
  });
});
