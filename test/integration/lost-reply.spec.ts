// Found by the chaos run (npm run chaos): a spend whose script ran in time, but whose reply never
// reached the caller (its connection was killed: CLIENT KILL, a master SIGKILLed after the script
// ran), stays charged while the caller is refused with a store failure. The late-reply refund
// covers replies that arrive after the timeout, not replies that never arrive. This spec pins the
// case down with a proxy that lets the command through and drops its reply with the connection.
// `it.failing` until the store closes the gap: Jest reports it as passing while the expectation
// fails, and as failing once it holds (then make it a plain `it`).
import * as net from 'node:net';
import Redis from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import { storageKey } from '../../lib/stores/storage-key.util';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

/** A TCP proxy to Redis that can swallow the next reply and close the client's connection. */
async function replyDroppingProxy(redisPort: number) {
  let dropNext = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(redisPort, '127.0.0.1');
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (!dropNext) return void client.write(d);
      dropNext = false;
      client.destroy(); // the command ran; its answer is lost with the connection
      upstream.destroy();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    dropNextReply: () => (dropNext = true),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a spend whose reply is lost with its connection', () => {
  let server: StartedRedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(() => server.stop());

  it("leaves no charge once the caller was refused for a store failure", async () => {
    const proxy = await replyDroppingProxy(server.port);
    const client = new Redis(proxy.port, '127.0.0.1', {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
    });
    client.on('error', () => {});
    const check = new Redis(server.url);
    try {
      const store = new RedisStore({ client, prefix: 'lost:' });
      const limiter = new Limiter(
        store,
        { name: 'p', algorithm: 'fixed-window', limit: 5, window: '1h' },
        { onStoreFailure: () => {} },
      );
      await limiter.peek('k'); // library loaded, clock measured
      proxy.dropNextReply();
      const decision = await limiter.consume('k');
      expect(decision.allowed).toBe(false);
      expect(decision.failure).toBeDefined();
      console.log(store.lostReplies, await check.keys('lost:*'));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      console.log(store.lostReplies, await check.keys('lost:*'));
      expect(await check.get(storageKey('lost:', 'k', 'p', 0))).toBeNull();
    } finally {
      client.disconnect();
      check.disconnect();
      await proxy.close();
    }
  });
});
