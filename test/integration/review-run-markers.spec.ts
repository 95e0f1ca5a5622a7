// Review of "outcome markers by run" (5964eb0), against a real Redis Cluster (the run's shared
// Cluster; skipped without one: REDLIMIT_TEST_CLUSTER=0).
import { Cluster } from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import { clusterNodes } from '../support/cluster-handle';

const nodes = clusterNodes();
const describeOnCluster = nodes ? describe : describe.skip;

describeOnCluster('review: run markers, the outcome hash on Cluster', () => {
  let client: Cluster;
  beforeAll(async () => {
    client = new Cluster(nodes!, { redisOptions: { maxRetriesPerRequest: 2 } });
    await new Promise((resolve) => client.once('ready', resolve));
  });
  afterAll(() => client.disconnect());

  // RedisStore accepts any string as its prefix. With an unmatched `{` in it, the caller keys'
  // slot comes from the prefix's `{` on ('rl{:{k}:p:0' → tag ':{k'), while the outcome hash
  // `<prefix>{<slot tag>}!<process tag>` gets the tag ':{<slot tag>' (another slot): every spend
  // is one script run with keys in two slots, refused (CROSSSLOT). Before 5964eb0 the marker
  // was `<prefix>{<caller key's tag>}!<spend id>`, in the keys' slot whatever the prefix; off
  // Cluster nothing changes. Expected: the spends work (or the prefix is refused at startup).
  it.each([true, false])('prefix "rl{:" (coalesce %p): spends are decided', async (coalesce) => {
    const store = new RedisStore({ client, prefix: `review-rm{${coalesce}:`, coalesce });
    const limiter = new Limiter(
      store,
      { name: 'p', algorithm: 'fixed-window', limit: 50, window: '1h' },
      { onStoreFailure: () => {} },
    );
    const decisions = await Promise.all(
      ['a', 'b', 'a', 'c', 'a'].map((key) => limiter.consume(key)),
    );
    expect(decisions.map((d) => [d.allowed, d.failure?.error.message])).toEqual(
      decisions.map(() => [true, undefined]),
    );
  });
});
