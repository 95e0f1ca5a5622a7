/**
 * node-redis (`redis` on npm) clients for specs: a single connection or a Cluster, connected and
 * warmed, on the run's Redis, its Cluster, or a server of a spec's own.
 */
import { createClient, createCluster } from 'redis';

/** A connected node-redis v5 client. */
export type NodeRedisClient = ReturnType<typeof createClient>;
/** A connected node-redis v5 Cluster client. */
export type NodeRedisCluster = ReturnType<typeof createCluster>;

/** A node-redis client on `url`, connected; call `close()` (or `destroy()`) when done. */
export async function connectNodeRedis(url: string): Promise<NodeRedisClient> {
  const client = createClient({ url });
  client.on('error', () => undefined); // reconnects are reported by the commands that fail
  await client.connect();
  await Promise.all(Array.from({ length: 20 }, () => client.ping()));
  return client;
}

/** A node-redis Cluster client on these startup nodes, connected to every master. */
export async function connectNodeRedisCluster(
  nodes: ReadonlyArray<{ host: string; port: number }>,
): Promise<NodeRedisCluster> {
  const cluster = createCluster({
    rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
  });
  cluster.on('error', () => undefined);
  await cluster.connect();
  await Promise.all(Array.from({ length: 20 }, (_, i) => cluster.get(`warm:{${i}}`)));
  return cluster;
}
