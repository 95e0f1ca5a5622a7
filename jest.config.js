/**
 * Jest configuration (CommonJS).
 *
 * One Redis for the whole run is provisioned by test/support/global-setup.ts
 * (REDIS_URL > Docker via testcontainers > a spawned redis-server on a free
 * port) and handed to the workers as REDLIMIT_TEST_REDIS_URL.
 *
 * ts-jest only transpiles (isolatedModules): types are checked by
 * `npm run typecheck`, which keeps the test run fast on a 2-core machine.
 *
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        // tsconfig.json, plus isolatedModules => per-file transpile, no type-check.
        tsconfig: { isolatedModules: true },
      },
    ],
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  // REDLIMIT_PROPERTY_SEED replays a fast-check failure from its seed.
  setupFiles: ['<rootDir>/test/support/property-seed.ts'],
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
