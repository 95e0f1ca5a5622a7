/**
 * Jest globalSetup: provisions the ONE Redis of the test run and exports its URL
 * to the workers (forked afterwards, they inherit process.env) as
 * REDLIMIT_TEST_REDIS_URL. See provision.ts for the order of preference.
 */
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

  const started = Date.now();
  const handle = await provisionRedis();
  setHandle(handle);
  process.env[URL_ENV] = handle.url;
  log(`${describeRedis(handle)} (${Date.now() - started} ms)`);
}
