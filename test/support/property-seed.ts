// Replays a fast-check failure: `REDLIMIT_PROPERTY_SEED=<seed from the report> npx jest <spec>`
// runs every property of the run from that seed (`REDLIMIT_PROPERTY_RUNS` sets how many cases).
import fc from 'fast-check';

const seed = process.env.REDLIMIT_PROPERTY_SEED;
if (seed !== undefined && seed !== '') {
  const value = Number(seed);
  if (!Number.isSafeInteger(value)) {
    throw new Error(`REDLIMIT_PROPERTY_SEED must be a whole number; got '${seed}'`);
  }
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: value });
}
