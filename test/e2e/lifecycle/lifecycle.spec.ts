import Redis from 'ioredis';
import { Limiter, LimiterRegistry, MemoryStore, RedlimitConnection } from '../../../lib/nest';
import type { RedisStore } from '../../../lib';
import { clusterNodes } from '../../support/cluster-handle';
import { connectNodeRedis } from '../../support/node-redis';
import { createTestClient, redisUrl, uniquePrefix } from '../../support/redis';
import { PLATFORMS, startApp } from '../support/app';
import { lifecycleApp } from './lifecycle.app';

describe.each(PLATFORMS)('module lifecycle and registry on %s', (platform) => {
  it('a client the module created is closed on shutdown', async () => {
    const app = await startApp(
      lifecycleApp({ redis: redisUrl(), prefix: uniquePrefix('e2e-life') }),
      platform,
    );
    const connection = app.app.get(RedlimitConnection);
    expect((await app.request('/ping')).status).toBe(200);
    expect(connection.kind).toBe('redis');
    expect(connection.client?.status).toBe('ready');
    await app.close();
    expect(connection.client?.status).toBe('end');
  });

  it("with failMode 'memory', the process joins its fleet and leaves it on shutdown", async () => {
    const prefix = uniquePrefix('e2e-fleet');
    const check = createTestClient();
    try {
      const app = await startApp(
        lifecycleApp({ redis: redisUrl(), prefix, failMode: 'memory' }),
        platform,
      );
      const store = app.app.get(RedlimitConnection).store as RedisStore;
      expect((await app.request('/ping')).status).toBe(200);
      await store.heartbeat();
      // (Each member has an entry, and one for when its latest answered beat ran.)
      const members = async () =>
        (await check.zrange(`${prefix}fleet`, 0, -1)).filter((m) => !m.startsWith('~ack~'));
      expect(await members()).toHaveLength(1);
      await app.close();
      expect(await check.zcard(`${prefix}fleet`)).toBe(0);
    } finally {
      await check.quit();
    }
  });

  it('outcomeMarkers, fleetBeatMs and fleetTtlMs reach the Redis store it builds', async () => {
    const prefix = uniquePrefix('e2e-store-options');
    const check = createTestClient();
    const app = await startApp(
      lifecycleApp({
        redis: redisUrl(),
        prefix,
        failMode: 'memory',
        outcomeMarkers: false,
        fleetBeatMs: 250,
        fleetTtlMs: 2_000,
      }),
      platform,
    );
    try {
      expect((await app.request('/ping')).status).toBe(200);
      // No outcome marker (`}!`) was written for the spend.
      expect((await check.keys(`${prefix}*`)).filter((k) => k.includes('}!'))).toEqual([]);
      // A member last seen 3 s ago is gone at the next beat: members are kept 2 s, not 10 min.
      const [seconds] = await check.time();
      await check.zadd(`${prefix}fleet`, Number(seconds) * 1000 - 3_000, 'ghost');
      const store = app.app.get(RedlimitConnection).store as RedisStore;
      await store.heartbeat();
      expect(await check.zscore(`${prefix}fleet`, 'ghost')).toBeNull();
      // A value the store would refuse stops the app before a client is created.
      await expect(
        startApp(lifecycleApp({ redis: redisUrl(), prefix, fleetBeatMs: 5 }), platform),
      ).rejects.toThrow(/RedlimitModule options\.fleetBeatMs must be/);
    } finally {
      await app.close();
      await check.quit();
    }
  });

  const onCluster = clusterNodes() ? it : it.skip;
  onCluster(
    'with redis: { nodes }, a Cluster client it creates, limits, and closes on shutdown',
    async () => {
      const app = await startApp(
        lifecycleApp({ redis: { nodes: clusterNodes()! }, prefix: uniquePrefix('e2e-cluster') }),
        platform,
      );
      const connection = app.app.get(RedlimitConnection);
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await app.request('/ping')).status);
      expect(codes).toEqual([200, 200, 429]);
      expect((connection.client as { isCluster?: boolean } | undefined)?.isCluster).toBe(true);
      await app.close();
      expect(connection.client?.status).toBe('end');
    },
  );

  it('warns at startup about a client passed in that would queue commands without bound', async () => {
    const risky = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const safe = createTestClient();
    try {
      const warned = await startApp(lifecycleApp({ redis: { client: risky } }), platform);
      expect(warned.logs.join('\n')).toMatch(/warn: .*maxRetriesPerRequest: null/);
      await warned.close();
      const quiet = await startApp(lifecycleApp({ redis: { client: safe } }), platform);
      expect(quiet.logs.join('\n')).not.toMatch(/maxRetriesPerRequest/);
      await quiet.close();
    } finally {
      risky.disconnect();
      await safe.quit();
    }
  });

  it('a client passed in is never closed', async () => {
    const client = createTestClient();
    try {
      const app = await startApp(
        lifecycleApp({ redis: { client }, prefix: uniquePrefix('e2e-life') }),
        platform,
      );
      expect((await app.request('/ping')).status).toBe(200);
      const { port } = new URL(redisUrl());
      expect(app.logs).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^log: Rate limits are kept in Redis at 127\\.0\\.0\\.1:${port} \\(the client passed in\\), prefix 'test:e2e-life:`,
          ),
        ),
      );
      await app.close();
      expect(client.status).toBe('ready');
      expect(await client.ping()).toBe('PONG');
    } finally {
      await client.quit();
    }
  });

  it('a node-redis client passed in: limits, says where Redis is, and is never closed', async () => {
    const client = await connectNodeRedis(redisUrl());
    try {
      const app = await startApp(
        lifecycleApp({ redis: { client }, prefix: uniquePrefix('e2e-life') }),
        platform,
      );
      const connection = app.app.get(RedlimitConnection);
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await app.request('/ping')).status);
      expect(codes).toEqual([200, 200, 429]);
      expect(connection.redisClient).toBe(client);
      expect(connection.client).toBeUndefined(); // not an ioredis client
      expect(connection.status).toBe('ready');
      const { port } = new URL(redisUrl());
      expect(app.logs).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^log: Rate limits are kept in Redis at redis://127\\.0\\.0\\.1:${port} \\(the client passed in\\)`,
          ),
        ),
      );
      await app.close();
      expect(client.isReady).toBe(true);
      expect(await client.ping()).toBe('PONG');
    } finally {
      await client.close();
    }
  });

  it('with neither redis nor store: the MemoryStore, and a startup warning that limits are per process', async () => {
    const app = await startApp(lifecycleApp({}), platform);
    try {
      expect(app.app.get(RedlimitConnection).store).toBeInstanceOf(MemoryStore);
      expect(app.logs.join('\n')).toMatch(/warn: .*in-memory store.*per process/);
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await app.request('/ping')).status);
      expect(codes).toEqual([200, 200, 429]);
    } finally {
      await app.close();
    }
  });

  it('an option the module does not know stops startup, naming it', async () => {
    await expect(
      startApp(
        lifecycleApp({
          polices: { p: { algorithm: 'fixed-window', limit: 1, window: '1m' } },
        } as never),
        platform,
      ),
    ).rejects.toThrow(/unknown option 'polices'/);
  });

  it('a keySecret shorter than 16 characters (or empty, or not a string) stops startup, without showing it', async () => {
    for (const keySecret of ['short-secret', '', 1234567890123456 as never]) {
      const failure = await startApp(lifecycleApp({ keySecret }), platform).then(
        (app) => app.close().then(() => 'started'),
        (error: unknown) => String(error),
      );
      expect(failure).toMatch(
        /RedlimitModule keySecret must be a string of at least 16 characters/,
      );
      expect(failure).not.toMatch(/short-secret|1234567890/);
    }
    const app = await startApp(lifecycleApp({ keySecret: 'sixteen-chars-ok' }), platform);
    await app.close();
  });

  it('the registry: get() by name, a clear error for an unknown name, register() at runtime, inline policies', async () => {
    const app = await startApp(lifecycleApp({ store: new MemoryStore() }), platform);
    try {
      const registry = app.app.get(LimiterRegistry);
      expect(registry.get('ping')).toBeInstanceOf(Limiter);
      expect(() => registry.get('nope')).toThrow(/no policy named 'nope'; known policies: 'ping'/);
      const otp = registry.register({
        name: 'otp',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
      });
      expect(registry.get('otp')).toBe(otp);
      expect(() =>
        registry.register({ name: 'otp', algorithm: 'fixed-window', limit: 9, window: '1m' }),
      ).toThrow(/different policy named 'otp'/);
      expect((await otp.consume('phone:1')).allowed).toBe(true);
      expect((await otp.consume('phone:1')).allowed).toBe(false);

      expect((await app.request('/inline')).status).toBe(200);
      expect((await app.request('/inline')).status).toBe(429);
      expect(registry.names.sort()).toEqual(['inline', 'otp', 'ping']);
    } finally {
      await app.close();
    }
  });
});
