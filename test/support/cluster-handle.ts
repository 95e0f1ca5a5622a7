/** The run's shared cluster, kept on globalThis between globalSetup and globalTeardown. */
import type { StartedRedisCluster } from './cluster';

/** Where workers find the shared cluster's nodes (JSON `[{ host, port }]`). */
export const CLUSTER_ENV = 'REDLIMIT_TEST_CLUSTER_NODES';

const KEY = Symbol.for('redlimit.test.cluster');
type Holder = { [KEY]?: StartedRedisCluster };

export function getCluster(): StartedRedisCluster | undefined {
  return (globalThis as Holder)[KEY];
}

export function setCluster(cluster: StartedRedisCluster | undefined): void {
  (globalThis as Holder)[KEY] = cluster;
}

/** The shared cluster's startup nodes, or undefined when the run has none. */
export function clusterNodes(): Array<{ host: string; port: number }> | undefined {
  const raw = process.env[CLUSTER_ENV];
  return raw ? (JSON.parse(raw) as Array<{ host: string; port: number }>) : undefined;
}
