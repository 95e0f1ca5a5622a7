import type { Redis } from 'ioredis';
import { LimiterRegistry } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { Calls, graphqlApp, PASSWORD } from './graphql.app';

interface GraphQLErrorBody {
  message: string;
  path?: string[];
  extensions?: Record<string, unknown>;
}

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorBody[];
}

describe.each(PLATFORMS)('GraphQL resolvers (Apollo) on %s', (platform) => {
  let client: Redis;
  let app: RunningApp;
  let calls: Calls;

  const gql = async (
    query: string,
    variables: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ): Promise<{ response: Response; body: GraphQLBody }> => {
    const response = await app.request('/graphql', {
      method: 'POST',
      body: { query, variables },
      headers,
    });
    return { response, body: (await response.json()) as GraphQLBody };
  };
  const signIn = (email: string, password: string) =>
    gql('mutation ($e: String!, $p: String!) { signIn(email: $e, password: $p) }', {
      e: email,
      p: password,
    });
  const signInWithInput = (email: string, password: string) =>
    gql('mutation ($i: SignInInput!) { signInWithInput(input: $i) }', {
      i: { email, password },
    });
  const codeOf = (body: GraphQLBody) => body.errors?.[0]?.extensions?.code;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    calls = new Calls();
    app = await startApp(
      graphqlApp(client, uniquePrefix('e2e-graphql'), calls, platform),
      platform,
    );
  });
  afterEach(() => app.close());

  it('trusted devices over GraphQL: a sign-in sets the device cookie; with it the owner gets in while the account is locked for others', async () => {
    const signInFromDevice = (
      email: string,
      password: string,
      headers: Record<string, string> = {},
    ) =>
      gql(
        'mutation ($e: String!, $p: String!) { signInFromDevice(email: $e, password: $p) }',
        { e: email, p: password },
        headers,
      );
    const first = await signInFromDevice('ada@example.com', PASSWORD);
    expect(first.body.data).toEqual({ signInFromDevice: true });
    const cookie = /^(redlimit_device\.[^=;]+=[^;]+);/.exec(
      first.response.headers.get('set-cookie') ?? '',
    )?.[1];
    expect(cookie).toBeDefined();
    for (let i = 0; i < 2; i++) {
      expect((await signInFromDevice('ada@example.com', 'guess')).body.errors?.[0]?.message).toBe(
        'Wrong email or password',
      );
    }
    expect(codeOf((await signInFromDevice('ada@example.com', PASSWORD)).body)).toBe('RATE_LIMITED');
    const trusted = await signInFromDevice('ada@example.com', PASSWORD, { cookie: cookie! });
    expect(trusted.body.data).toEqual({ signInFromDevice: true });
    const header = await signInFromDevice('ada@example.com', PASSWORD, {
      'redlimit-device': cookie!.slice(cookie!.indexOf('=') + 1),
    });
    expect(header.body.data).toEqual({ signInFromDevice: true });
    // Another login's account, with Ada's token: no token at all.
    for (let i = 0; i < 2; i++) await signInFromDevice('grace@example.com', 'guess');
    expect(
      codeOf((await signInFromDevice('grace@example.com', PASSWORD, { cookie: cookie! })).body),
    ).toBe('RATE_LIMITED');
  });

  it('@Throttle limit 2: the third query is refused with RATE_LIMITED and retryAfterMs, and the resolver never runs', async () => {
    const first = await gql('{ ping }');
    expect(first.body).toEqual({ data: { ping: 'pong' } });
    expect(first.response.headers.get('ratelimit-policy')).toBe('"two";q=2;w=3600');
    expect(first.response.headers.get('ratelimit')).toMatch(/^"two";r=1;t=\d+$/);
    expect((await gql('{ ping }')).body).toEqual({ data: { ping: 'pong' } });

    const refused = await gql('{ ping }');
    expect(refused.body.data).toBeNull();
    expect(refused.body.errors).toHaveLength(1);
    const error = refused.body.errors![0]!;
    expect(error.path).toEqual(['ping']);
    expect(error.message).toMatch(/^Rate limit of policy 'two' exceeded; retry in \d+ s$/);
    const { code, policy, retryAfterMs, retryAfter } = error.extensions as {
      code: string;
      policy: string;
      retryAfterMs: number;
      retryAfter: number;
    };
    expect({ code, policy }).toEqual({ code: 'RATE_LIMITED', policy: 'two' });
    expect(Number.isInteger(retryAfterMs)).toBe(true);
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(3_600_000);
    expect(retryAfter).toBe(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    // The HTTP response behind the operation carries the refusal too.
    expect(refused.response.headers.get('retry-after')).toBe(String(retryAfter));
    expect(refused.response.headers.get('ratelimit')).toBe(`"two";r=0;t=${retryAfter}`);
    expect(calls.count).toBe(2);
  });

  it('resolvers sharing a policy keep separate budgets: the default key is Type.field + client IP', async () => {
    await gql('{ ping }');
    await gql('{ ping }');
    expect(codeOf((await gql('{ ping }')).body)).toBe('RATE_LIMITED');
    expect((await gql('{ pong }')).body).toEqual({ data: { pong: 'ping' } });

    // peek answers what one more call would get
    const two = app.app.get(LimiterRegistry).get('two');
    expect((await two.peek('graphql Query.ping|ip:127.0.0.1')).allowed).toBe(false);
    expect(await two.peek('graphql Query.pong|ip:127.0.0.1')).toMatchObject({
      allowed: true,
      remaining: 0,
    });
  });

  it('every resolver call is charged: two aliases in one operation spend the whole budget', async () => {
    expect((await gql('{ a: ping b: ping }')).body).toEqual({ data: { a: 'pong', b: 'pong' } });
    expect(codeOf((await gql('{ ping }')).body)).toBe('RATE_LIMITED');
  });

  it('a key function sees the HTTP request behind the GraphQL context', async () => {
    const as = (key: string) => gql('{ byApiKey }', {}, { 'x-api-key': key });
    expect((await as('alice')).body.errors).toBeUndefined();
    expect((await as('alice')).body.errors).toBeUndefined();
    expect(codeOf((await as('alice')).body)).toBe('RATE_LIMITED');
    expect((await as('bob')).body).toEqual({ data: { byApiKey: 'ok' } }); // same IP, own budget
  });

  it('@Attempt with refund: right passwords cost nothing, the third wrong one is refused before the resolver runs', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await signIn('alice@example.com', PASSWORD)).body).toEqual({
        data: { signIn: true },
      });
    }
    for (let i = 0; i < 2; i++) {
      const wrong = await signIn('alice@example.com', 'guess');
      expect(wrong.body.errors?.[0]?.message).toBe('Wrong email or password');
    }
    const refused = await signIn('alice@example.com', 'guess');
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({
      code: 'RATE_LIMITED',
      policy: 'login',
    });
    expect(refused.body.errors?.[0]?.extensions?.retryAfterMs).toBeGreaterThan(0);
    expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(calls.count).toBe(5);
    // The budget is spent: the right password waits too.
    expect(codeOf((await signIn('alice@example.com', PASSWORD)).body)).toBe('RATE_LIMITED');
  });

  it('@Attempt parts come from the GraphQL arguments', async () => {
    const sendCode = (email: string) =>
      gql('mutation ($e: String!) { sendCode(email: $e) }', { e: email });
    expect((await sendCode('alice@example.com')).body).toEqual({ data: { sendCode: true } });
    expect((await sendCode('alice@example.com')).body).toEqual({ data: { sendCode: true } });
    expect(codeOf((await sendCode('alice@example.com')).body)).toBe('RATE_LIMITED');
    expect((await sendCode('bob@example.com')).body).toEqual({ data: { sendCode: true } });
    expect(calls.count).toBe(3);
  });

  it('@Attempt parts come from the fields of an input object argument', async () => {
    await signInWithInput(' Alice@Example.com ', 'guess');
    await signInWithInput('alice@example.com', 'guess');
    expect(codeOf((await signInWithInput('ALICE@example.com', 'guess')).body)).toBe('RATE_LIMITED');
    // Another account has its own budget: the email was read from the input.
    const bob = await signInWithInput('bob@example.com', 'guess');
    expect(bob.body.errors?.[0]?.message).toBe('Wrong email or password');
    expect(calls.count).toBe(3);
  });

  it("parts may name their source ('args.input.email'); a bare field given twice with different values is refused as BAD_USER_INPUT", async () => {
    const byPath = (email: string) =>
      gql('mutation ($i: SignInInput!) { sendCodeByPath(input: $i) }', {
        i: { email, password: '' },
      });
    expect((await byPath('alice@example.com')).body).toEqual({ data: { sendCodeByPath: true } });
    expect((await byPath('ALICE@example.com')).body).toEqual({ data: { sendCodeByPath: true } });
    expect(codeOf((await byPath('alice@example.com')).body)).toBe('RATE_LIMITED');

    const twice = (email: string, inner: string) =>
      gql('mutation ($e: String!, $i: SignInInput!) { sendCodeTwice(email: $e, input: $i) }', {
        e: email,
        i: { email: inner, password: '' },
      });
    const conflict = await twice('bob@example.com', 'mallory@example.com');
    expect(conflict.body.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      part: 'email',
      sources: ['args', 'args.input'],
    });
    expect((await twice('bob@example.com', ' Bob@example.com')).body).toEqual({
      data: { sendCodeTwice: true },
    });
    expect(calls.count).toBe(3);
  });

  it("a source a resolver does not have ('body.email') is a clear error, never a silent miss", async () => {
    const { body } = await gql('mutation { sendCodeFromBody(email: "alice@example.com") }');
    expect(body.errors?.[0]?.message).toMatch(
      /field 'body\.email' on SignInResolver\.sendCodeFromBody: a GraphQL resolver has no 'body'/,
    );
    expect(calls.count).toBe(0);
  });
});
