/**
 * RedisStore on node-redis's Sentinel client (`createSentinel()` of `redis` v5), against the real
 * Sentinel harness (a master, a replica, three sentinels): decisions on the master, the function
 * library reloaded there, the module's status and log, and a failover.
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createSentinel } from 'redis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import { LimiterRegistry, RedlimitConnection, RedlimitModule } from '../../lib/nest';
import { clientStatus } from '../../lib/stores/clients/client-port';
import { clusterNodes } from '../support/cluster-handle';
import { uniquePrefix } from '../support/redis';
import { startRedisSentinel, type StartedRedisSentinel } from '../support/sentinel';

// As sentinel.spec.ts: Sentinel runs where the Cluster suites run (REDLIMIT_TEST_CLUSTER).
const describeWithSentinel = clusterNodes() ? describe : describe.skip;

jest.setTimeout(60_000);

type NodeRedisSentinel = ReturnType<typeof createSentinel>;

/** How one decision settled; `hung` would be a call that outlived the limiter's own deadline. */
type Outcome = 'allowed' | 'refused' | 'failed-closed' | 'hung';

async function settle(limiter: Limiter, key: string): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), limiter.timeoutMs * 10);
  });
  try {
    const decision: Decision | 'hung' = await Promise.race([limiter.consume(key), hung]);
    if (decision === 'hung') return 'hung';
    if (decision.failure) return 'failed-closed';
    return decision.allowed ? 'allowed' : 'refused';
  } finally {
    clearTimeout(timer);
  }
}

describeWithSentinel('RedisStore on a node-redis Sentinel client (createSentinel)', () => {
  let deployment: StartedRedisSentinel;
  const opened: NodeRedisSentinel[] = [];
  beforeAll(async () => {
    deployment = await startRedisSentinel();
  });
  afterAll(async () => {
    for (const sentinel of opened) if (sentinel.isOpen) await sentinel.destroy();
    await deployment?.stop();
  });

  const connectSentinel = async (): Promise<NodeRedisSentinel> => {
    const sentinel = createSentinel({
      name: deployment.name,
      sentinelRootNodes: deployment.sentinels.map(({ host, port }) => ({ host, port })),
    });
    sentinel.on('error', () => undefined); // reconnections during a failover are expected
    opened.push(sentinel);
    await sentinel.connect();
    return sentinel;
  };

  it('admits exactly 5 of 30 concurrent at limit 5, on the master, and reports ready', async () => {
    const sentinel = await connectSentinel();
    const prefix = uniquePrefix('sentinel-node-redis');
    const limiter = new Limiter(new RedisStore({ client: sentinel, prefix }), {
      name: 'login',
      algorithm: 'sliding-window',
      limit: 5,
      window: '1h',
    });
    const decisions = await Promise.all(
      Array.from({ length: 30 }, () => limiter.consume('ip:203.0.113.7')),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(decisions.every((d) => d.failure === undefined)).toBe(true);
    expect(await deployment.onMaster((master) => master.keys(`${prefix}*`))).not.toHaveLength(0);
    expect(clientStatus(sentinel)).toBe('ready');
    await sentinel.close();
    expect(clientStatus(sentinel)).toBe('end');
  });

  it('reloads the function library on the master after FUNCTION FLUSH and SCRIPT FLUSH', async () => {
    const sentinel = await connectSentinel();
    const prefix = uniquePrefix('sentinel-node-redis-flush');
    const limiter = new Limiter(new RedisStore({ client: sentinel, prefix }), {
      name: 'api',
      algorithm: 'token-bucket',
      limit: 3,
      window: '1h',
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    await deployment.onMaster(async (master) => {
      await master.call('FUNCTION', 'FLUSH');
      await master.call('SCRIPT', 'FLUSH');
    });
    const after = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(after.every((d) => d.failure === undefined)).toBe(true);
    expect(after.filter((d) => d.allowed)).toHaveLength(2);
    await sentinel.close();
  });

  it('RedlimitModule with redis: { client } limits through it, logs its master, and leaves it open', async () => {
    const sentinel = await connectSentinel();
    const prefix = uniquePrefix('sentinel-node-redis-module');
    const logs: string[] = [];
    const logger = {
      log: (message: unknown) => logs.push(String(message)),
      error: () => undefined,
      warn: () => undefined,
    };
    @Module({
      imports: [
        RedlimitModule.forRoot({
          redis: { client: sentinel },
          prefix,
          policies: { login: { algorithm: 'fixed-window', limit: 2, window: '1h' } },
        }),
      ],
    })
    class NodeRedisSentinelModule {}
    const app = await NestFactory.createApplicationContext(NodeRedisSentinelModule, {
      logger,
      abortOnError: false,
    });
    const login = app.get(LimiterRegistry).get('login');
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push((await login.consume('email:alice')).allowed);
    expect(allowed).toEqual([true, true, false]);
    const connection = app.get(RedlimitConnection);
    expect(connection.kind).toBe('redis');
    expect(connection.status).toBe('ready');
    await app.close();
    expect(sentinel.isOpen).toBe(true);
    const { port } = await deployment.masterAddress();
    expect(logs.filter((line) => line.startsWith('Rate limits are kept in Redis'))).toEqual([
      `Rate limits are kept in Redis at the master 127.0.0.1:${port} of a node-redis Sentinel client (the client passed in), prefix '${prefix}'`,
    ]);
    await sentinel.close();
  });

  it('follows a failover: master killed, each decision settles as allowed or failed closed, then resumes on the promoted replica', async () => {
    const sentinel = await connectSentinel();
    const limiter = new Limiter(
      new RedisStore({ client: sentinel, prefix: uniquePrefix('sentinel-node-redis-failover') }),
      {
        name: 'api',
        algorithm: 'fixed-window',
        limit: 1_000_000,
        window: '1h',
        failMode: 'closed',
      },
      { timeoutMs: 500, onStoreFailure: () => undefined },
    );
    const outcomes: Array<{ phase: 'before' | 'after'; outcome: Outcome; startedAt: number }> = [];
    const run = async (phase: 'before' | 'after', done: () => boolean) => {
      while (!done()) {
        const startedAt = performance.now();
        outcomes.push({ phase, outcome: await settle(limiter, 'ip:198.51.100.1'), startedAt });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const resumed = () => {
      const tail = outcomes.slice(-20);
      return (
        tail.length === 20 && tail.every((o) => o.phase === 'after' && o.outcome === 'allowed')
      );
    };
    await run('before', () => outcomes.length >= 20);
    const old = await deployment.killMaster();
    const killedAt = performance.now();
    await run('after', () => resumed() || performance.now() - killedAt > 30_000);
    const promoted = await deployment.waitForFailover(old);

    expect(outcomes.filter((o) => o.phase === 'before').map((o) => o.outcome)).toEqual(
      Array.from({ length: 20 }, () => 'allowed'),
    );
    const after = outcomes.filter((o) => o.phase === 'after');
    const tally: Partial<Record<Outcome, number>> = {};
    for (const { outcome } of after) tally[outcome] = (tally[outcome] ?? 0) + 1;
    const firstOfStreak = outcomes[outcomes.length - 20];
    console.log(
      `node-redis Sentinel failover ${old.port} -> ${promoted.port}: after the kill ${JSON.stringify(tally)}; ` +
        `allowed again ${firstOfStreak ? Math.round(firstOfStreak.startedAt - killedAt) : '-'} ms after the kill`,
    );
    expect(after.filter((o) => o.outcome === 'hung' || o.outcome === 'refused')).toEqual([]);
    expect(resumed()).toBe(true);
    expect(sentinel.getMasterNode()?.port).toBe(promoted.port);
    expect(clientStatus(sentinel)).toBe('ready');
    await sentinel.close();
  });
});
