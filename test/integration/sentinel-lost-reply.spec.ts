// A spend whose reply is lost on a Sentinel client: the client reaches the master through a proxy
// that can drop a reply with the connection (ioredis `natMap` maps the address the sentinels name
// to the proxy). The client then asks the sentinels again, reconnects and, with ioredis's default
// `autoResendUnfulfilledCommands`, sends the spend again: the copy must not charge twice. Without
// resending, the lost spend must be settled: nothing stays charged.
import type Redis from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import { storageKey } from '../../lib/stores/storage-key.util';
import { clusterNodes } from '../support/cluster-handle';
import { lossyProxy, type LossyProxy } from '../support/lossy-proxy';
import { uniquePrefix } from '../support/redis';
import { startRedisSentinel, type StartedRedisSentinel } from '../support/sentinel';
import { until } from '../support/until';

// Sentinel runs where the Cluster suites run (see sentinel.spec.ts).
const describeWithSentinel = clusterNodes() ? describe : describe.skip;

jest.setTimeout(60_000);

describeWithSentinel('Redis Sentinel: a spend whose reply is lost', () => {
  let deployment: StartedRedisSentinel;
  let proxy: LossyProxy;
  beforeAll(async () => {
    deployment = await startRedisSentinel();
    const master = await deployment.masterAddress();
    proxy = await lossyProxy(master.port);
  });
  afterAll(async () => {
    await proxy?.close();
    await deployment?.stop();
  });

  async function setup(autoResendUnfulfilledCommands: boolean) {
    const master = await deployment.masterAddress();
    const client: Redis = await deployment.createClient({
      autoResendUnfulfilledCommands,
      maxRetriesPerRequest: 3,
      natMap: { [`${master.host}:${master.port}`]: { host: '127.0.0.1', port: proxy.port } },
    });
    const prefix = uniquePrefix('sentinel-lost');
    const store = new RedisStore({ client, prefix });
    const limiter = new Limiter(
      store,
      { name: 'p', algorithm: 'fixed-window', limit: 5, window: '1h' },
      { timeoutMs: 1_000, onStoreFailure: () => undefined },
    );
    const stored = () =>
      deployment.onMaster((m) => m.get(storageKey(prefix, 'k', 'p', 0)).then(Number));
    return { client, store, limiter, stored };
  }

  it('sent again after reconnecting through the sentinels: charged once, answered allowed', async () => {
    const { client, limiter, stored } = await setup(true);
    await limiter.consume('k');
    proxy.dropNextReply();
    const decision = await limiter.consume('k');
    expect(decision.failure).toBeUndefined();
    expect(decision.allowed).toBe(true);
    expect(await stored()).toBe(2);
    client.disconnect();
  });

  it('not sent again: settled once it can no longer run, nothing stays charged', async () => {
    const { client, store, limiter, stored } = await setup(false);
    await limiter.consume('k');
    proxy.dropNextReply();
    const decision = await limiter.consume('k');
    expect(decision.failure).toBeDefined();
    expect(await stored()).toBe(2); // it ran
    await until(() => store.lostReplies.refunded === 1);
    expect(await stored()).toBe(1);
    client.disconnect();
  });
});
