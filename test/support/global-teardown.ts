/**
 * Jest globalTeardown: stops the container / kills the spawned redis-server
 * (SIGTERM, then SIGKILL) and removes its temp dir.
 */
import { URL_ENV, getHandle, releaseRedis, setHandle } from './provision';

export default async function globalTeardown(): Promise<void> {
  const handle = getHandle();
  setHandle(undefined);
  try {
    await releaseRedis(handle);
  } finally {
    if (handle) delete process.env[URL_ENV];
  }
}
