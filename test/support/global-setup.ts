/**
 * Jest globalSetup: provisions the ONE Redis of the test run and exports its URL
 * to the workers (forked afterwards, they inherit process.env) as
 * REDLIMIT_TEST_REDIS_URL. See provision.ts for the order of preference.
 *
 * It also starts one local Redis Cluster (3 masters + 3 replicas) for the specs
 * that run the core guarantees on Cluster, exported as REDLIMIT_TEST_CLUSTER_NODES
 * (JSON host/port list). REDLIMIT_TEST_CLUSTER=0 skips it (those specs then skip
 * their cluster cases).
 */
import { startRedisCluster } from './cluster';
import { CLUSTER_ENV, getCluster, setCluster } from './cluster-handle';
import {
  URL_ENV,
  describeRedis,
  getHandle,
  log,
  provisionRedis,
  releaseRedis,
  setHandle,
} from './provision';

export default async function globalSetup(): Promise<void> {
  // Watch mode runs setup again: release what the previous run left, if anything.
  await releaseRedis(getHandle());
  setHandle(undefined);
  await getCluster()?.stop();
  setCluster(undefined);

  const started = Date.now();
  const handle = await provisionRedis();
  setHandle(handle);
  process.env[URL_ENV] = handle.url;
  log(`${describeRedis(handle)} (${Date.now() - started} ms)`);

  if (process.env.REDLIMIT_TEST_CLUSTER !== '0') {
    const clusterStarted = Date.now();
    const cluster = await startRedisCluster();
    setCluster(cluster);
    process.env[CLUSTER_ENV] = JSON.stringify(cluster.nodes);
    log(`started a Redis Cluster of 6 nodes (${Date.now() - clusterStarted} ms)`);
  }
}
