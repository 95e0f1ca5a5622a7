import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { abuseControlsGraphqlApp, GraphqlSeen } from './abuse-controls-graphql.app';

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; path?: string[]; extensions?: Record<string, unknown> }>;
}

describe.each(PLATFORMS)('lockouts and shadow mode on GraphQL resolvers on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let seen: GraphqlSeen;

  const gql = async (query: string): Promise<{ response: Response; body: GraphQLBody }> => {
    const response = await app.request('/graphql', { method: 'POST', body: { query } });
    return { response, body: (await response.json()) as GraphQLBody };
  };
  const outcomes = (policy: string) =>
    seen.events.filter((e) => e.policy === policy).map((e) => e.outcome);

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    seen = new GraphqlSeen();
    app = await startApp(
      abuseControlsGraphqlApp(client, uniquePrefix('e2e-abuse-graphql'), seen, platform),
      platform,
    );
  });
  afterEach(() => app.close());

  it('a lockout refuses with RATE_LIMITED and retryAfter at its end (5 min, not the 1-min window); the resolver never runs', async () => {
    expect((await gql('{ login }')).body).toEqual({ data: { login: 'ok' } });
    expect((await gql('{ login }')).body).toEqual({ data: { login: 'ok' } });

    // The refusing call starts the lockout: its wait is the block's whole duration.
    const locked = await gql('{ login }');
    expect(locked.body.data).toBeNull();
    expect(locked.body.errors).toHaveLength(1);
    const error = locked.body.errors![0]!;
    expect(error.path).toEqual(['login']);
    expect(error.message).toBe("Rate limit of policy 'login' exceeded; retry in 300 s");
    expect(error.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      policy: 'login',
      retryAfterMs: 300_000,
      retryAfter: 300,
    });
    // The HTTP response behind the operation says the same.
    expect(locked.response.headers.get('retry-after')).toBe('300');
    expect(locked.response.headers.get('ratelimit')).toBe('"login";r=0;t=300');

    // The next call is held by the lockout, not by the 1-minute window.
    const held = await gql('{ login }');
    const { retryAfterMs } = held.body.errors![0]!.extensions as { retryAfterMs: number };
    expect(retryAfterMs).toBeGreaterThan(240_000); // the 5-min lockout, not the 1-min window
    expect(retryAfterMs).toBeLessThanOrEqual(300_000);
    expect(Number(held.response.headers.get('retry-after'))).toBeGreaterThan(240);

    expect(seen.resolved).toBe(2);
    expect(outcomes('login')).toEqual(['allowed', 'allowed', 'blocked', 'blocked']);
    const blocked = seen.events.find((e) => e.outcome === 'blocked')!;
    expect(blocked.blockedUntil! - Date.now()).toBeGreaterThan(240_000); // the 5-min lockout
  });

  it('a shadow policy lets its refusals through to the resolver and reports them', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await gql('{ canary }')).body).toEqual({ data: { canary: 'ok' } });
    }
    expect(seen.resolved).toBe(3);
    expect(outcomes('canary')).toEqual(['allowed', 'shadow-refused', 'shadow-refused']);
  });

  it('@Attempt on a shadow policy runs the resolver with the shadow refusal', async () => {
    expect((await gql('mutation { otp }')).body).toEqual({ data: { otp: false } });
    expect((await gql('mutation { otp }')).body).toEqual({ data: { otp: true } });
    expect(seen.resolved).toBe(2);
    expect(outcomes('otp')).toEqual(['allowed', 'shadow-refused']);
  });
});
