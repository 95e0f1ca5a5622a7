import Redis from 'ioredis';
import { parsePolicySpec, RedlimitConfigError, redlimitOptionsFromEnv } from '../../../lib/nest';
import { redisUrl, uniquePrefix } from '../../support/redis';
import { PLATFORMS, startApp } from '../support/app';
import { envApp } from './config-from-env.app';

describe.each(PLATFORMS)('forRootAsync with ConfigService and the env helper on %s', (platform) => {
  it('takes Redis, prefix, policies and headers from the environment', async () => {
    const prefix = uniquePrefix('e2e-env');
    const app = await startApp(
      envApp({
        REDIS_URL: redisUrl(),
        REDLIMIT_PREFIX: prefix,
        REDLIMIT_POLICIES: 'login=fixed-window:2/15m, api=sliding-window:3/1m+10/1h',
        REDLIMIT_HEADERS: 'legacy',
      }),
      platform,
    );
    const probe = new Redis(redisUrl());
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await app.request('/login')).status);
      expect(codes).toEqual([200, 200, 429]);
      const api = await app.request('/api');
      expect(api.headers.get('x-ratelimit-limit')).toBe('3'); // env beat the code default of 100
      expect(api.headers.get('ratelimit')).toBeNull();
      expect(await probe.keys(`${prefix}*`)).not.toHaveLength(0);
    } finally {
      probe.disconnect();
      await app.close();
    }
  });

  it.each([
    ['REDLIMIT_POLICIES', { REDLIMIT_POLICIES: 'login=fixed-window:10/15x' }, /15x/],
    ['REDLIMIT_POLICIES', { REDLIMIT_POLICIES: 'login=leaky-bucket:10/15m' }, /leaky-bucket/],
    ['REDLIMIT_FAIL_MODE', { REDLIMIT_FAIL_MODE: 'sometimes' }, /sometimes/],
    ['REDLIMIT_TIMEOUT_MS', { REDLIMIT_TIMEOUT_MS: '1.5s' }, /1\.5s/],
    ['REDIS_URL', { REDIS_URL: 'http://user:hunter2@redis:6379' }, /user:\*\*\*@redis/],
  ])(
    'invalid %s: the app fails to boot with a message naming the variable',
    async (variable, env, value) => {
      const error = await startApp(envApp(env), platform).then(
        (app) => app.close().then(() => new Error('booted')),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RedlimitConfigError);
      expect((error as Error).message).toMatch(new RegExp(`^${variable}=`));
      expect((error as Error).message).toMatch(value);
      expect((error as Error).message).not.toMatch(/hunter2/);
    },
  );
});

describe('redlimitOptionsFromEnv and the compact policy syntax', () => {
  it('parses several policies, several limits, burst and fail mode', () => {
    expect(
      parsePolicySpec(
        'login=fixed-window:10/15m,\n api = sliding-window:100/1m+2000/1h:open, bucket=token-bucket:10/1s~50',
      ),
    ).toEqual({
      login: { algorithm: 'fixed-window', limit: 10, window: '15m' },
      api: {
        algorithm: 'sliding-window',
        limit: 100,
        window: '1m',
        limits: [{ limit: 2000, window: '1h' }],
        failMode: 'open',
      },
      bucket: { algorithm: 'token-bucket', limit: 10, window: '1s', burst: 50 },
    });
  });

  it.each([
    ['', /no policies/],
    ['login', /no policy name before =|algorithm and limits/],
    ['login=fixed-window', /algorithm and limits are required/],
    ['login=fixed-window:ten/15m', /'ten\/15m' is not limit\/window/],
    ['login=fixed-window:10/15m:maybe', /fail mode must be closed, open or memory/],
    ['login=fixed-window:10/15m,login=fixed-window:1/1m', /defined twice/],
    ['a b=fixed-window:1/1m', /policy\.name/],
  ])('rejects %j', (spec, message) => {
    expect(() => parsePolicySpec(spec)).toThrow(message);
  });

  it('reads process.env-like records; unset and empty mean "keep the default"', () => {
    const options = redlimitOptionsFromEnv(
      {
        REDLIMIT_REDIS_URL: 'redis://a:6379',
        REDIS_URL: 'redis://b:6379',
        REDLIMIT_FAIL_MODE: 'open',
        REDLIMIT_TIMEOUT_MS: '250',
        REDLIMIT_HEADERS: 'none',
        REDLIMIT_TRUSTED_PROXIES: 'loopback, 10.0.0.0/8',
        REDLIMIT_IPV6_SUBNET: '56',
        REDLIMIT_PREFIX: '',
      },
      { prefix: 'app:', timeoutMs: 1000 },
    );
    expect(options).toEqual({
      redis: 'redis://a:6379',
      prefix: 'app:',
      failMode: 'open',
      timeoutMs: 250,
      headers: false,
      clientIp: { trustedProxies: ['loopback', '10.0.0.0/8'], ipv6Subnet: 56 },
    });
  });

  it("reads REDLIMIT_TRUSTED_HOPS, and 'unix' in REDLIMIT_TRUSTED_PROXIES; an odd hop count names the variable", () => {
    expect(
      redlimitOptionsFromEnv({
        REDLIMIT_TRUSTED_PROXIES: 'unix, 10.0.0.0/8',
        REDLIMIT_TRUSTED_HOPS: '2',
      }).clientIp,
    ).toEqual({ trustedProxies: ['unix', '10.0.0.0/8'], trustedHops: 2 });
    for (const hops of ['0', '-1', '1.5', 'Infinity', 'two', '1e3']) {
      expect(() =>
        redlimitOptionsFromEnv({
          REDLIMIT_TRUSTED_PROXIES: 'private',
          REDLIMIT_TRUSTED_HOPS: hops,
        }),
      ).toThrow(
        new RegExp(
          `^REDLIMIT_TRUSTED_HOPS="${hops.replace('.', '\\.')}" is invalid: clientIp\\.trustedHops must be a whole number ≥ 1`,
        ),
      );
    }
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_TRUSTED_HOPS: '1' })).toThrow(
      /^REDLIMIT_TRUSTED_HOPS="1" is invalid: clientIp\.trustedHops counts hops through clientIp\.trustedProxies/,
    );
  });

  it('reads shadow mode and the refusal cache', () => {
    expect(
      redlimitOptionsFromEnv({ REDLIMIT_SHADOW: 'TRUE', REDLIMIT_REFUSAL_CACHE: 'true' }),
    ).toEqual({ shadow: true, refusalCache: true });
    expect(
      redlimitOptionsFromEnv({ REDLIMIT_SHADOW: 'false', REDLIMIT_REFUSAL_CACHE: '5000' }),
    ).toEqual({ shadow: false, refusalCache: { maxKeys: 5000 } });
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_SHADOW: 'yes' })).toThrow(
      /^REDLIMIT_SHADOW="yes" is invalid: expected true or false/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_REFUSAL_CACHE: '0' })).toThrow(
      /^REDLIMIT_REFUSAL_CACHE="0" is invalid: expected true, false or a whole number of at least 1/,
    );
  });

  it('reads outcome markers and the fleet timings', () => {
    expect(
      redlimitOptionsFromEnv({
        REDLIMIT_OUTCOME_MARKERS: 'false',
        REDLIMIT_FLEET_BEAT_MS: '2000',
        REDLIMIT_FLEET_TTL_MS: '60000',
      }),
    ).toEqual({ outcomeMarkers: false, fleetBeatMs: 2000, fleetTtlMs: 60000 });
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_OUTCOME_MARKERS: 'off' })).toThrow(
      /^REDLIMIT_OUTCOME_MARKERS="off" is invalid: expected true or false/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_FLEET_BEAT_MS: '1.5' })).toThrow(
      /^REDLIMIT_FLEET_BEAT_MS="1\.5" is invalid: expected a whole number of milliseconds/,
    );
  });

  it('names the variable in every error, and never shows a secret', () => {
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_DEFAULT_POLICY: 'x' })).toThrow(
      /^REDLIMIT_DEFAULT_POLICY="x" is invalid: no such policy/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_TRUSTED_PROXIES: 'proxy.local' })).toThrow(
      /^REDLIMIT_TRUSTED_PROXIES="proxy.local"/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_IPV6_SUBNET: '200' })).toThrow(
      /^REDLIMIT_IPV6_SUBNET="200"/,
    );
    expect(() =>
      redlimitOptionsFromEnv({
        REDLIMIT_TRUSTED_PROXIES: 'loopback',
        REDLIMIT_CLIENT_IP_HEADER: 'x-client-ip',
      }),
    ).toThrow(
      /^REDLIMIT_CLIENT_IP_HEADER="x-client-ip" is invalid: clientIp\.header must be one of/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_CLIENT_IP_HEADER: 'forwarded' })).toThrow(
      /^REDLIMIT_CLIENT_IP_HEADER="forwarded" is invalid: .*set clientIp\.trustedProxies/,
    );
    expect(
      redlimitOptionsFromEnv({
        REDLIMIT_TRUSTED_PROXIES: 'loopback',
        REDLIMIT_CLIENT_IP_HEADER: 'CF-Connecting-IP',
      }).clientIp,
    ).toEqual({ trustedProxies: ['loopback'], header: 'cf-connecting-ip' });
    // A password pasted with an unencoded '@' or '/' is masked too.
    expect(() => redlimitOptionsFromEnv({ REDIS_URL: 'http://:p@ss@cache:6379' })).toThrow(
      /^REDIS_URL="http:\/\/:\*\*\*@cache:6379" is invalid/,
    );
    expect(() => redlimitOptionsFromEnv({ REDIS_URL: 'https://u:pa/ss@cache' })).toThrow(
      /^REDIS_URL="https:\/\/u:\*\*\*@cache" is invalid/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_KEY_SECRET: 'short-secret' })).toThrow(
      /^REDLIMIT_KEY_SECRET="\*\*\*" is invalid/,
    );
  });

  // Every other variable treats empty as unset; a secret set to '' or spaces is a mistake (a
  // template or a secret store that rendered nothing), and going on without it would silently
  // downgrade the keys to plain SHA-256, as the module option keySecret already refuses.
  it.each(['', '   ', '\t\n'])(
    'REDLIMIT_KEY_SECRET=%j (set, but empty or blank) stops startup, naming the variable only',
    (blank) => {
      for (const source of [
        { REDLIMIT_KEY_SECRET: blank },
        { get: (name: string) => (name === 'REDLIMIT_KEY_SECRET' ? blank : undefined) },
      ]) {
        expect(() => redlimitOptionsFromEnv(source)).toThrow(
          /^REDLIMIT_KEY_SECRET="\*\*\*" is invalid: it is set but empty or blank; unset it to go without a secret, or give at least 16 characters$/,
        );
      }
      expect(redlimitOptionsFromEnv({ REDLIMIT_KEY_SECRET: undefined })).not.toHaveProperty(
        'keySecret',
      );
    },
  );
});
