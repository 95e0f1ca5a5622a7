import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { attemptIdentityApp, Checked, CountingStore } from './attempt-identity.app';

interface BadRequestBody {
  statusCode: number;
  message: string;
  part: string;
  sources?: string[];
}

describe.each(PLATFORMS)('@Attempt identity on %s', (platform) => {
  let app: RunningApp;
  let store: CountingStore;
  let checked: Checked;

  beforeEach(async () => {
    store = new CountingStore();
    checked = new Checked();
    app = await startApp(attemptIdentityApp(store, checked), platform);
  });
  afterEach(() => app.close());

  const post = (path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, { method: 'POST', body, headers });
  const random = () => `${Math.random().toString(36).slice(2)}@example.com`;
  const expectBadRequest = async (response: Response, part: string): Promise<BadRequestBody> => {
    expect(response.status).toBe(400);
    const body = (await response.json()) as BadRequestBody;
    expect(body).toMatchObject({ statusCode: 400, part });
    expect(body.message).toContain(part);
    return body;
  };

  describe('1. a part reads the value the handler uses', () => {
    it("'params.email': a fresh random email in the body each time does not mint a fresh budget", async () => {
      for (let i = 0; i < 3; i++) {
        expect((await post('/by-param/alice@example.com', { email: random() })).status).toBe(200);
      }
      const locked = await post('/by-param/alice@example.com', { email: random() });
      expect(locked.status).toBe(429);
      expect(checked.accounts).toEqual(Array(3).fill('alice@example.com'));
      // Another account keeps its own budget.
      expect((await post('/by-param/bob@example.com')).status).toBe(200);
    });

    it('a bare part present in body and params with different values → 400 naming the field and both sources; nothing charged, handler never runs', async () => {
      for (let i = 0; i < 10; i++) {
        const body = await expectBadRequest(
          await post('/bare/alice@example.com', { email: random() }),
          'email',
        );
        expect(body.sources).toEqual(['body', 'params']);
        expect(body.message).toMatch(/body.*params/);
      }
      // An empty body email does not open a shared budget either.
      await expectBadRequest(await post('/bare/alice@example.com', { email: '' }), 'email');
      expect(checked.accounts).toEqual([]);
      expect(store.consumes).toBe(0);
      // The same account in both places (after normalisation) is fine; the budget is intact.
      expect((await post('/bare/alice@example.com', { email: ' Alice@Example.COM' })).status).toBe(
        200,
      );
      expect((await post('/bare/alice@example.com')).status).toBe(200);
      expect((await post('/bare/alice@example.com')).status).toBe(200);
      expect((await post('/bare/alice@example.com')).status).toBe(429);
    });

    it('a bare part in body and query with different values → 400 naming both sources', async () => {
      const response = await post('/bare-query?email=alice@example.com', { email: random() });
      const body = await expectBadRequest(response, 'email');
      expect(body.sources).toEqual(['body', 'query']);
      expect(checked.accounts).toEqual([]);
      expect(store.consumes).toBe(0);
    });

    it("'query.email', 'headers.x-account' and 'body.user.email' read exactly there", async () => {
      for (let i = 0; i < 3; i++) {
        const query = await post('/query?email=alice@example.com', { email: random() });
        expect(query.status).toBe(200);
        const header = await post('/header', { email: random() }, { 'x-account': 'A-1' });
        expect(header.status).toBe(200);
        const nested = await post('/nested', {
          user: { email: 'bob@example.com' },
          email: random(),
        });
        expect(nested.status).toBe(200);
      }
      expect((await post('/query?email=alice@example.com', { email: random() })).status).toBe(429);
      expect((await post('/header', {}, { 'x-account': ' a-1 ' })).status).toBe(429);
      expect((await post('/nested', { user: { email: 'BOB@example.com' } })).status).toBe(429);
      expect((await post('/query?email=carol@example.com')).status).toBe(200);
      expect((await post('/header', {}, { 'x-account': 'A-2' })).status).toBe(200);
      // Keys are named after the field's last segment: one account, one budget across routes.
      expect((await post('/nested', { user: { email: 'alice@example.com' } })).status).toBe(429);
    });
  });

  describe('2. a value that is not a string or a finite number is a 400, not a shared budget', () => {
    it.each<[string, unknown]>([
      ['an array', ['alice@example.com']],
      ['an object', { $ne: 'x' }],
      ['a boolean', true],
      ['null', null],
    ])(
      '%s in the body → 400 naming the part; nothing charged; handler never runs',
      async (_title, email) => {
        await expectBadRequest(await post('/body', { email }), 'body.email');
        expect(checked.accounts).toEqual([]);
        expect(store.consumes).toBe(0);
      },
    );

    it('a repeated query parameter (an array) → 400', async () => {
      await expectBadRequest(
        await post('/query?email=alice@example.com&email=alice@example.com'),
        'query.email',
      );
      expect(checked.accounts).toEqual([]);
      expect(store.consumes).toBe(0);
    });

    it('an email[]= form body is refused on Express (400 naming the part); Fastify has no email in it', async () => {
      const response = await fetch(`${app.url}/body`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email[]=alice%40example.com',
      });
      if (platform === 'express') {
        await expectBadRequest(response, 'body.email');
        expect(checked.accounts).toEqual([]);
        expect(store.consumes).toBe(0);
      } else {
        // Fastify reads the field as 'email[]': no email for the part, none for the handler.
        expect(response.status).toBe(200);
        expect(checked.accounts).toEqual(['undefined']);
      }
    });

    it('absent and empty values still share the documented missing-value budget', async () => {
      for (let i = 0; i < 3; i++)
        expect((await post('/body', i % 2 ? {} : { email: '' })).status).toBe(200);
      expect((await post('/body', {})).status).toBe(429);
      expect((await post('/body', { email: 'alice@example.com' })).status).toBe(200);
    });
  });

  describe('3. field values are normalised as users are', () => {
    it('full-width, zero-width, soft hyphen and composed/decomposed spellings share one budget', async () => {
      for (const email of [
        'ＡＤＡ@example.com',
        'ada\u200b@example.com',
        'a\u00add\u200da@example.com',
      ]) {
        expect((await post('/body', { email })).status).toBe(200);
      }
      expect((await post('/body', { email: '\ufeffAda@Example.com ' })).status).toBe(429);
      expect((await post('/body', { email: 'jos\u00e9@example.com' })).status).toBe(200);
      expect((await post('/body', { email: 'jose\u0301@example.com' })).status).toBe(200);
      expect((await post('/body', { email: 'JOSE\u0301@example.com' })).status).toBe(200);
      expect((await post('/body', { email: 'jos\u00e9@example.com' })).status).toBe(429);
    });

    it.each(['/computed', '/computed-spec'])(
      'a function part (%s) is normalised by default: its spellings of one account share one budget',
      async (path) => {
        for (const email of ['alice@example.com', ' Alice@Example.COM', 'ＡＬＩＣＥ@example.com']) {
          expect((await post(path, { email })).status).toBe(200);
        }
        expect((await post(path, { email: 'ALICE@EXAMPLE.COM ' })).status).toBe(429);
        expect((await post(path, { email: 'bob@example.com' })).status).toBe(200);
      },
    );

    it('normalize: false keeps values as sent (case-sensitive tokens)', async () => {
      for (let i = 0; i < 3; i++) expect((await post('/exact', { token: 'Tok' })).status).toBe(200);
      expect((await post('/exact', { token: 'Tok' })).status).toBe(429);
      expect((await post('/exact', { token: 'tok' })).status).toBe(200);
      expect((await post('/exact', { token: 'Tok\u200b' })).status).toBe(200);
    });
  });

  // A key function built on contextField split budgets by spelling: 'Alice@…', ' alice@…' and
  // full-width 'ＡＬＩＣＥ@…' were three accounts, where the @Attempt part is one.
  it('contextField: a key function built on it gives one budget per account, however it is spelled; { raw: true } keeps the value as sent', async () => {
    for (const email of ['Alice@Example.com', ' alice@example.com', 'ＡＬＩＣＥ@example.com']) {
      expect((await post('/key-function', { email })).status).toBe(200);
    }
    for (const email of ['alice@example.com', 'ALICE@EXAMPLE.COM', 'ali\u200bce@example.com']) {
      expect((await post('/key-function', { email })).status).toBe(429);
    }
    expect((await post('/key-function', { email: 'bob@example.com' })).status).toBe(200);
    // A case-sensitive value, read raw: 'Tok' and 'tok' are two tokens.
    for (let i = 0; i < 3; i++) {
      expect((await post('/key-function-raw', { token: 'Tok' })).status).toBe(200);
    }
    expect((await post('/key-function-raw', { token: 'Tok' })).status).toBe(429);
    expect((await post('/key-function-raw', { token: 'tok' })).status).toBe(200);
  });
});
