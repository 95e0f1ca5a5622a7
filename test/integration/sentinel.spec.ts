import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type Decision, Limiter, RedisStore } from '../../lib';
import {
  LimiterRegistry,
  RedlimitConnection,
  RedlimitModule,
  type RedlimitModuleOptions,
  redlimitOptionsFromEnv,
} from '../../lib/nest';
import { clusterNodes } from '../support/cluster-handle';
import { uniquePrefix } from '../support/redis';
import { startRedisSentinel, type StartedRedisSentinel } from '../support/sentinel';

// Sentinel runs where the Cluster suites run (REDLIMIT_TEST_CLUSTER, set by .ci/run): both need
// the redis-server binary, and both start several servers.
const describeWithSentinel = clusterNodes() ? describe : describe.skip;

jest.setTimeout(60_000);

/** How one decision settled. `hung` would be a call that outlived the limiter's own deadline. */
type Outcome = 'allowed' | 'refused' | 'failed-closed' | 'hung';

function outcome(decision: Decision | 'hung'): Outcome {
  if (decision === 'hung') return 'hung';
  if (decision.failure) return 'failed-closed';
  return decision.allowed ? 'allowed' : 'refused';
}

/**
 * A decision, or `'hung'` when it has not settled long after its `timeoutMs`. The guard is a
 * hang detector, far above `timeoutMs`; the bound itself is the limiter's deadline, which turns
 * a late answer into a decision with `failure.reason === 'timeout'`.
 */
async function settle(limiter: Limiter, key: string): Promise<Decision | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), limiter.timeoutMs * 10);
  });
  try {
    return await Promise.race([limiter.consume(key), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** The port a client's connection is open to. */
function remotePort(client: unknown): number | undefined {
  return (client as { stream?: { remotePort?: number } }).stream?.remotePort;
}

describeWithSentinel('Redis Sentinel: decisions on the master the sentinels name', () => {
  let deployment: StartedRedisSentinel;
  beforeAll(async () => {
    deployment = await startRedisSentinel();
  });
  afterAll(() => deployment?.stop());

  const sentinelOptions = () => ({
    sentinels: deployment.sentinels.map(({ host, port }) => ({ host, port })),
    name: deployment.name,
  });

  it('RedisStore on an ioredis Sentinel client admits exactly 5 of 30 concurrent at limit 5', async () => {
    const client = await deployment.createClient();
    const prefix = uniquePrefix('sentinel');
    const limiter = new Limiter(new RedisStore({ client, prefix }), {
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
    // The state is on the master itself.
    expect(await deployment.onMaster((master) => master.keys(`${prefix}*`))).not.toHaveLength(0);
    client.disconnect();
  });

  const fromOptions = (prefix: string): RedlimitModuleOptions => ({
    redis: sentinelOptions(),
    prefix,
    policies: { login: { algorithm: 'fixed-window', limit: 2, window: '1h' } },
  });
  const fromEnvironment = (prefix: string): RedlimitModuleOptions =>
    redlimitOptionsFromEnv({
      REDLIMIT_REDIS_SENTINELS: deployment.sentinels.map((s) => `${s.host}:${s.port}`).join(','),
      REDLIMIT_REDIS_SENTINEL_NAME: deployment.name,
      REDLIMIT_PREFIX: prefix,
      REDLIMIT_POLICIES: 'login=fixed-window:2/1h',
    });

  it.each([
    ['redis: { sentinels, name }', fromOptions],
    ['REDLIMIT_REDIS_SENTINELS and REDLIMIT_REDIS_SENTINEL_NAME', fromEnvironment],
  ])(
    'RedlimitModule with %s limits through the master, and closes its client',
    async (_, options) => {
      const prefix = uniquePrefix('sentinel-module');
      @Module({ imports: [RedlimitModule.forRoot(options(prefix))] })
      class SentinelAppModule {}
      const moduleRef = await NestFactory.createApplicationContext(SentinelAppModule, {
        logger: false,
        abortOnError: false,
      });
      const connection = moduleRef.get(RedlimitConnection);
      const login = moduleRef.get(LimiterRegistry).get('login');
      const allowed = [];
      for (let i = 0; i < 3; i++) allowed.push((await login.consume('email:alice')).allowed);
      expect(allowed).toEqual([true, true, false]);
      expect(connection.kind).toBe('redis');
      const { port } = await deployment.masterAddress();
      expect(remotePort(connection.client)).toBe(port);
      expect(await deployment.onMaster((master) => master.keys(`${prefix}*`))).not.toHaveLength(0);
      await moduleRef.close();
      expect(connection.client?.status).toBe('end');
    },
  );

  it('the startup log names the sentinels and the master, for a Sentinel client passed in too', async () => {
    const client = await deployment.createClient();
    const logs: string[] = [];
    const logger = {
      log: (message: unknown) => logs.push(String(message)),
      error: () => undefined,
      warn: () => undefined,
    };
    const sentinels = deployment.sentinels.map((s) => `${s.host}:${s.port}`).join(', ');
    for (const redis of [sentinelOptions(), { client }]) {
      @Module({ imports: [RedlimitModule.forRoot({ redis })] })
      class SentinelLogModule {}
      const app = await NestFactory.createApplicationContext(SentinelLogModule, {
        logger,
        abortOnError: false,
      });
      await app.close();
    }
    client.disconnect();
    const kept = logs.filter((line) => line.startsWith('Rate limits are kept in Redis'));
    expect(kept).toEqual([
      `Rate limits are kept in Redis at the master '${deployment.name}' of Sentinel ${sentinels}, prefix 'rl:'`,
      `Rate limits are kept in Redis at the master '${deployment.name}' of Sentinel ${sentinels} (the client passed in), prefix 'rl:'`,
    ]);
  });

  it('follows a failover: master killed, replica promoted, decisions resume; each one settles as allowed, refused or failed closed', async () => {
    const connection = await RedlimitConnection.open({
      redis: sentinelOptions(),
      prefix: uniquePrefix('sentinel-failover'),
    });
    const limiter = new Limiter(
      connection.store,
      {
        name: 'api',
        algorithm: 'fixed-window',
        limit: 1_000_000,
        window: '1h',
        failMode: 'closed',
      },
      { timeoutMs: 500, onStoreFailure: () => undefined },
    );
    type Record_ = { phase: 'before' | 'after'; outcome: Outcome; startedAt: number; ms: number };
    const outcomes: Record_[] = [];
    const run = async (phase: 'before' | 'after', done: () => boolean) => {
      while (!done()) {
        const startedAt = performance.now();
        const decision = await settle(limiter, 'ip:198.51.100.1');
        outcomes.push({
          phase,
          outcome: outcome(decision),
          startedAt,
          ms: performance.now() - startedAt,
        });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    // Resumed: the last 20 decisions were made after the kill, and all were allowed.
    const resumed = () => {
      const tail = outcomes.slice(-20);
      return (
        tail.length === 20 && tail.every((o) => o.phase === 'after' && o.outcome === 'allowed')
      );
    };
    try {
      await run('before', () => outcomes.length >= 20);
      const old = await deployment.killMaster();
      const killedAt = performance.now();
      await run('after', () => resumed() || performance.now() - killedAt > 30_000);
      const promoted = await deployment.waitForFailover(old);

      const after = outcomes.filter((o) => o.phase === 'after');
      const counts = (list: readonly Record_[]) =>
        list.reduce<Partial<Record<Outcome, number>>>((tally, o) => {
          tally[o.outcome] = (tally[o.outcome] ?? 0) + 1;
          return tally;
        }, {});
      const firstOfStreak = outcomes[outcomes.length - 20];
      console.log(
        `Sentinel failover ${old.port} -> ${promoted.port}: after the kill ${JSON.stringify(counts(after))}; ` +
          `allowed again ${firstOfStreak ? Math.round(firstOfStreak.startedAt - killedAt) : '-'} ms after the kill; ` +
          `longest decision ${Math.round(Math.max(...outcomes.map((o) => o.ms)))} ms (timeoutMs ${limiter.timeoutMs})`,
      );
      expect(counts(outcomes.filter((o) => o.phase === 'before'))).toEqual({ allowed: 20 });
      // Every decision settled by the limiter's own deadline (none hung), and a failure was the
      // fail mode's refusal, never a budget refusal (the budget is a million).
      expect(after.filter((o) => o.outcome === 'hung' || o.outcome === 'refused')).toEqual([]);
      expect(resumed()).toBe(true);
      // The decisions now land on the promoted replica.
      expect(remotePort(connection.client)).toBe(promoted.port);
    } finally {
      await connection.onApplicationShutdown();
    }
  });
});
