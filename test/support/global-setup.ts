/**
 * Jest globalSetup: provisions the ONE Redis of the test run and exports its URL
 * to the workers (forked afterwards, they inherit process.env) as
 * REDLIMIT_TEST_REDIS_URL. See provision.ts for the order of preference.
 *
 * It also starts one local Redis Cluster (3 masters + 3 replicas) for the specs
 * that run the core guarantees on Cluster, exported as REDLIMIT_TEST_CLUSTER_NODES
 * (JSON host/port list). REDLIMIT_TEST_CLUSTER=0 skips it (those specs then skip
 * their cluster cases); so does a machine without redis-server / redis-cli binaries, unless
 * REDLIMIT_TEST_CLUSTER=1 demands the cluster (CI sets it: .ci/run installs them).
 */
import { startRedisCluster } from './cluster';
import { findRedisCliBinary, findRedisServerBinary } from './redis-server';
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
    const missing = missingClusterBinaries();
    if (missing && process.env.REDLIMIT_TEST_CLUSTER !== '1') {
      // E.g. a machine with Docker but no local Redis: the single-node suites still run.
      log(`no local Redis Cluster (${missing}): cluster cases are skipped`);
      return;
    }
    const clusterStarted = Date.now();
    const cluster = await startRedisCluster();
    setCluster(cluster);
    process.env[CLUSTER_ENV] = JSON.stringify(cluster.nodes);
    log(`started a Redis Cluster of 6 nodes (${Date.now() - clusterStarted} ms)`);
  }
}

/** Why a local cluster cannot be started here (no redis-server / redis-cli), if it cannot. */
function missingClusterBinaries(): string | undefined {
  try {
    findRedisServerBinary();
    findRedisCliBinary();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message.split('\n')[0] : String(error);
  }
}
