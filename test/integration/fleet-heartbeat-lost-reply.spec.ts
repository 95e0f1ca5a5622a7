// Found by the chaos run's fleet scenario (bench/chaos.ts): a heartbeat whose reply is lost with
// its connection never answers on an ioredis client that does not resend the commands of a
// broken connection (`autoResendUnfulfilledCommands: false` with `maxRetriesPerRequest` 1, the
// settings the Nest module gives its own clients): ioredis drops them without settling their
// promises. The beat has no deadline, so it waits forever, every later beat joins it, and the
// process never beats again: its view of the fleet goes stale (the others see it lapse and grow
// their shares while it keeps its own) and what its fallback allowed is never charged into Redis.
//
// Now every call of the fleet is bounded (lib/stores/bounded.util.ts): the lost beat fails after
// its bound, and the next one is sent.
import Redis from 'ioredis';
import { RedisStore } from '../../lib';
import { lossyProxy, type LossyProxy } from '../support/lossy-proxy';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `settled` or `pending` after `ms`. */
function within(promise: Promise<unknown>, ms: number): Promise<'settled' | 'pending'> {
  const settled = promise.then(
    () => 'settled' as const,
    () => 'settled' as const,
  );
  return Promise.race([settled, sleep(ms).then(() => 'pending' as const)]);
}

describe('a heartbeat whose reply is lost with its connection', () => {
  let server: StartedRedisServer;
  let proxy: LossyProxy;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    proxy = await lossyProxy(server.port);
  });
  afterAll(async () => {
    client?.disconnect();
    await proxy.close();
    await server.stop();
  });

  it('settles, and the next heartbeat reaches Redis again', async () => {
    client = new Redis(proxy.port, {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      retryStrategy: () => 20,
    });
    client.on('error', () => undefined);
    const store = new RedisStore({ client, prefix: `beat:${Math.random()}:`, fleetBeatMs: 100 });
    await store.heartbeat();
    proxy.dropNextReply(); // the beat runs; its reply goes with the connection
    expect(await within(store.heartbeat(), 5_000)).toBe('settled');
    expect(await within(store.heartbeat(), 5_000)).toBe('settled');
    await store.heartbeat();
    expect(store.fleet.view?.size).toBe(1);
    await store.leaveFleet();
  });
});
