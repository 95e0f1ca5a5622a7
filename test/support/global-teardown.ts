/**
 * Jest globalTeardown: stops the container / kills the spawned redis-server
 * (SIGTERM, then SIGKILL) and removes its temp dir; stops the shared cluster.
 */
import { CLUSTER_ENV, getCluster, setCluster } from './cluster-handle';
import { URL_ENV, getHandle, releaseRedis, setHandle } from './provision';

export default async function globalTeardown(): Promise<void> {
  const handle = getHandle();
  const cluster = getCluster();
  setHandle(undefined);
  setCluster(undefined);
  try {
    await Promise.all([releaseRedis(handle), cluster?.stop()]);
  } finally {
    if (handle) delete process.env[URL_ENV];
    delete process.env[CLUSTER_ENV];
  }
}
