/**
 * `redlimit/nest` serves GraphQL resolvers, WebSocket gateways and microservice handlers, but
 * must load in an HTTP-only app that has none of those packages installed.
 */
const CONTEXT_PACKAGES = [
  '@nestjs/graphql',
  '@nestjs/apollo',
  '@apollo/server',
  'graphql',
  '@nestjs/websockets',
  '@nestjs/platform-ws',
  'ws',
  '@nestjs/microservices',
];

describe('packaging: redlimit/nest without GraphQL, WebSocket or microservice packages', () => {
  afterEach(() => {
    for (const name of CONTEXT_PACKAGES) jest.dontMock(name);
    jest.resetModules();
  });

  it('loads, and its guard, interceptor and decorators are there', () => {
    jest.isolateModules(() => {
      for (const name of CONTEXT_PACKAGES) {
        jest.doMock(name, () => {
          throw new Error(`Cannot find module '${name}'`);
        });
      }
      const nest = jest.requireActual<typeof import('../../../lib/nest')>('../../../lib/nest');
      expect(typeof nest.RedlimitGuard).toBe('function');
      expect(typeof nest.AttemptInterceptor).toBe('function');
      expect(typeof nest.Throttle).toBe('function');
      expect(typeof nest.Attempt).toBe('function');
      expect(typeof nest.RateLimitGraphQLError).toBe('function');
      expect(typeof nest.contextRequest).toBe('function');
    });
  });
});
