import Redis from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import type { TestClock } from './backends';
import { lossyProxy, type LossyProxy } from './lossy-proxy';
import { startRedisServer, type StartedRedisServer } from './redis';
import { until } from './until';

/** Whether a heartbeat of `store` was answered. */
export const answers = (store: RedisStore): Promise<boolean> =>
  store.heartbeat().then(
    () => true,
    () => false,
  );

/**
 * Processes of a fleet on one private redis-server, for specs of failMode 'memory': each store
 * stands for one process, its own connection through a proxy that can cut it (an outage). Call it
 * inside a `describe`: it registers the server's start and stop and each test's cleanup.
 */
export function fleetHarness(times: { beatMs: number; ttlMs: number }) {
  let server: StartedRedisServer;
  const proxies: LossyProxy[] = [];
  const open: Redis[] = [];
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server.stop();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    jest.useRealTimers();
    for (const p of proxies) p.up();
    await Promise.all(stores.splice(0).map((s) => s.leaveFleet().catch(() => undefined)));
    for (const c of open.splice(0)) c.disconnect();
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  /** A proxy to the server (closed after the test). */
  async function proxy(): Promise<LossyProxy> {
    const p = await lossyProxy(server.port);
    proxies.push(p);
    return p;
  }

  /** One process's store on `prefix`, its connection through `via`. */
  function processStore(via: LossyProxy, prefix: string, clock?: TestClock): RedisStore {
    const client = new Redis(via.port, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    });
    open.push(client);
    const store = new RedisStore({
      client,
      prefix,
      fleetBeatMs: times.beatMs,
      fleetTtlMs: times.ttlMs,
      ...(clock && { clock: () => clock.now }),
    });
    stores.push(store);
    return store;
  }

  /** A limiter of policy 'login' with failMode 'memory' on `store`. */
  const limiter = (store: RedisStore, policy: object): Limiter =>
    new Limiter(store, { name: 'login', failMode: 'memory', ...policy } as never, {
      timeoutMs: 500,
      onStoreFailure: () => undefined,
    });

  /** Every store has seen the whole fleet and may take a share. */
  async function established(members: RedisStore[]): Promise<void> {
    await until(async () => {
      await Promise.all(members.map(answers));
      return members.every(
        (s) => s.fleet.view?.established && s.fleet.view.size === members.length,
      );
    });
  }

  /** Cuts `via` (an outage) and waits until every member's heartbeat fails. */
  async function cut(via: LossyProxy, members: RedisStore[]): Promise<void> {
    via.down();
    await until(async () => (await Promise.all(members.map(answers))).every((ok) => !ok));
  }

  /** How many of `tries` consumes of `key` were allowed. */
  async function allowedOf(l: Limiter, key: string, tries: number): Promise<number> {
    let allowed = 0;
    for (let i = 0; i < tries; i++) if ((await l.consume(key)).allowed) allowed++;
    return allowed;
  }

  return { server: () => server, open, proxy, processStore, limiter, established, allowedOf, cut };
}
