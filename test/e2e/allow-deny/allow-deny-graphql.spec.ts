import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { allowDenyGraphqlApp, GraphqlSeen } from './allow-deny-graphql.app';

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; path?: string[]; extensions?: Record<string, unknown> }>;
}

describe.each(PLATFORMS)('the deny list on GraphQL resolvers (Apollo) on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let prefix: string;
  let seen: GraphqlSeen;

  /** An operation from `ip`, through the trusted loopback proxy. */
  const gql = async (ip: string, query: string) => {
    const response = await app.request('/graphql', {
      method: 'POST',
      body: { query },
      headers: { 'x-forwarded-for': ip },
    });
    return { response, body: (await response.json()) as GraphQLBody };
  };

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    seen = new GraphqlSeen();
    prefix = uniquePrefix('e2e-allow-deny-graphql');
    app = await startApp(allowDenyGraphqlApp(client, prefix, seen, platform), platform);
  });
  afterEach(() => app.close());

  it('a denied caller gets FORBIDDEN from @Throttle and @Attempt resolvers; they never run, nothing is charged', async () => {
    for (const [query, field] of [
      ['{ items }', 'items'],
      ['mutation { signIn }', 'signIn'],
    ] as const) {
      const denied = await gql('203.0.113.7', query);
      expect(denied.body).toEqual({
        data: null,
        errors: [
          expect.objectContaining({
            message: 'Access denied',
            path: [field],
            extensions: expect.objectContaining({ code: 'FORBIDDEN' }) as unknown,
          }),
        ],
      });
      expect(denied.response.headers.has('retry-after')).toBe(false);
      expect(denied.response.headers.has('ratelimit')).toBe(false);
    }
    expect(seen.resolved).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
    expect(seen.events.map((e) => [e.policy, e.outcome])).toEqual([
      ['two', 'denied'],
      ['login', 'denied'],
    ]);
  });

  it('a caller outside the denied range is limited as usual', async () => {
    expect((await gql('203.0.114.7', '{ items }')).body).toEqual({ data: { items: 'items' } });
    expect((await gql('203.0.114.7', '{ items }')).body).toEqual({ data: { items: 'items' } });
    const refused = await gql('203.0.114.7', '{ items }');
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(seen.resolved).toBe(2);
  });
});
