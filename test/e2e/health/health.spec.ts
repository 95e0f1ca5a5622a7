import Redis from 'ioredis';
import { startFreezableRedis } from '../../support/freezable-redis';
import { connectNodeRedis } from '../../support/node-redis';
import { redisUrl, startRedisServer, uniquePrefix } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { HEALTH_TIMEOUT_MS, healthApp } from './health.app';

/** A hang detector, far above the check's own bound (HEALTH_TIMEOUT_MS). */
const HANG_MS = 5_000;

const policies = {
  login: { algorithm: 'sliding-window', limit: 10, window: '15m' },
  api: { algorithm: 'token-bucket', limit: 100, window: '1m' },
} as const;

interface HealthBody {
  status: string;
  info?: Record<string, Record<string, unknown>>;
  error?: Record<string, Record<string, unknown>>;
}

describe.each(PLATFORMS)('RedlimitHealthIndicator (Terminus) on %s', (platform) => {
  let app: RunningApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const health = async (): Promise<{ status: number; body: HealthBody; ms: number }> => {
    const started = performance.now();
    const response = await app!.request('/health');
    return {
      status: response.status,
      body: (await response.json()) as HealthBody,
      ms: performance.now() - started,
    };
  };

  it('is up with Redis up: the store ran the script of every algorithm in use', async () => {
    app = await startApp(
      healthApp({ redis: redisUrl(), prefix: uniquePrefix('health'), policies }),
      platform,
    );
    const { status, body } = await health();
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.info?.['rate-limits']).toMatchObject({
      status: 'up',
      store: 'redis',
      connection: 'ready',
      algorithms: ['sliding-window', 'token-bucket'],
    });
  });

  it('is down, without hanging, once Redis is stopped', async () => {
    const server = await startRedisServer();
    try {
      app = await startApp(
        healthApp({ redis: server.url, prefix: uniquePrefix('health'), policies }),
        platform,
      );
      expect((await health()).status).toBe(200);
      await server.stop();
      const { status, body, ms } = await health();
      expect(status).toBe(503);
      expect(body.status).toBe('error');
      expect(body.error?.['rate-limits']).toMatchObject({ status: 'down', store: 'redis' });
      expect(body.error?.['rate-limits']?.error).toEqual(expect.any(String));
      expect(ms).toBeLessThan(HANG_MS);
    } finally {
      await server.stop();
    }
  });

  // The health output is often public (load balancers, status pages): a Redis error string can
  // name hosts, ports and, in some clients' messages, credentials. The output gives a generic
  // reason; the detail goes to the log.
  it("never puts the store's error text in its output: a generic reason, the detail in the log", async () => {
    const server = await startRedisServer(
      ['FCALL', 'FUNCTION', 'EVALSHA', 'EVAL'].flatMap((command) => [
        '--rename-command',
        command,
        '',
      ]),
    );
    const url = new URL(server.url);
    try {
      app = await startApp(
        healthApp({ redis: server.url, prefix: uniquePrefix('health'), policies }),
        platform,
      );
      const down = await health();
      expect(down.status).toBe(503);
      const text = JSON.stringify(down.body);
      expect(text).not.toMatch(/unknown command|FCALL|EVALSHA|ERR /i);
      expect(text).not.toContain(url.port);
      expect(down.body.error?.['rate-limits']?.error).toBe(
        'sliding-window: the store failed (the reason is in the log)',
      );
      expect(
        app.logs.filter((line) => /RedlimitHealthIndicator: .*unknown command/i.test(line)),
      ).toHaveLength(1);
      await server.stop();
      const stopped = JSON.stringify((await health()).body);
      expect(stopped).not.toContain(url.port);
      expect(stopped).not.toContain('127.0.0.1');
    } finally {
      await server.stop();
    }
  });

  it(`is down within its bound (${HEALTH_TIMEOUT_MS} ms) while Redis hangs`, async () => {
    const redis = await startFreezableRedis();
    try {
      app = await startApp(
        healthApp({ redis: redis.server.url, prefix: uniquePrefix('health'), policies }),
        platform,
      );
      expect((await health()).status).toBe(200);
      const { status, body, ms } = await redis.whileHung(health);
      expect(status).toBe(503);
      expect(body.error?.['rate-limits']?.error).toMatch(
        new RegExp(`did not answer within ${HEALTH_TIMEOUT_MS} ms`),
      );
      expect(ms).toBeLessThan(HANG_MS);
    } finally {
      await app?.close();
      app = undefined;
      await redis.stop();
    }
  });

  it('is down when Redis answers PING but cannot run scripts', async () => {
    const server = await startRedisServer(
      ['FCALL', 'FUNCTION', 'EVALSHA', 'EVAL'].flatMap((command) => [
        '--rename-command',
        command,
        '',
      ]),
    );
    const client = new Redis(server.url);
    try {
      expect(await client.ping()).toBe('PONG'); // a PING-only check would say up
      app = await startApp(
        healthApp({ redis: server.url, prefix: uniquePrefix('health'), policies }),
        platform,
      );
      const { status, body } = await health();
      expect(status).toBe(503);
      expect(body.error?.['rate-limits']).toMatchObject({ status: 'down', connection: 'ready' });
      expect(body.error?.['rate-limits']?.error).toMatch(/the store failed/);
      expect(
        app.logs.some((line) => /RedlimitHealthIndicator: .*unknown command/i.test(line)),
      ).toBe(true);
    } finally {
      client.disconnect();
      await server.stop();
    }
  });

  it('is up with a node-redis client passed in, and down with its state once Redis stops', async () => {
    const server = await startRedisServer();
    const client = await connectNodeRedis(server.url);
    try {
      app = await startApp(
        healthApp({ redis: { client }, prefix: uniquePrefix('health'), policies }),
        platform,
      );
      const up = await health();
      expect(up.status).toBe(200);
      expect(up.body.info?.['rate-limits']).toMatchObject({
        status: 'up',
        store: 'redis',
        connection: 'ready',
      });
      await server.stop();
      const { status, body, ms } = await health();
      expect(status).toBe(503);
      expect(body.error?.['rate-limits']).toMatchObject({ status: 'down', store: 'redis' });
      expect(body.error?.['rate-limits']?.connection).not.toBe('ready');
      expect(ms).toBeLessThan(HANG_MS);
    } finally {
      client.destroy();
      await server.stop();
    }
  });

  it('is up on the in-memory store, and says which store it is (limits per process)', async () => {
    app = await startApp(healthApp({ policies }), platform);
    const { status, body } = await health();
    expect(status).toBe(200);
    expect(body.info?.['rate-limits']).toMatchObject({ status: 'up', store: 'memory' });
    expect(body.info?.['rate-limits']).not.toHaveProperty('connection');
  });
});

describe('RedlimitHealthIndicator without @nestjs/terminus', () => {
  afterEach(() => {
    jest.dontMock('@nestjs/terminus');
    jest.resetModules();
  });

  it('redlimit/nest loads, indicator included, when @nestjs/terminus is not installed', () => {
    jest.isolateModules(() => {
      jest.doMock('@nestjs/terminus', () => {
        throw new Error("Cannot find module '@nestjs/terminus'");
      });
      const nest = jest.requireActual<typeof import('../../../lib/nest')>('../../../lib/nest');
      expect(typeof nest.RedlimitHealthIndicator).toBe('function');
    });
  });
});
