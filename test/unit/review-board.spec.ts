/**
 * Attacks on the ops board's pure parts: the module's options, the same-origin check, what the
 * pages show of a caller key an attacker chose, and the Locked out page past its 500 rows.
 *
 * Failing specs are holes (see each title); the others pin defences that held.
 */
import { BoardApp, CSRF_COOKIE, sameOrigin } from '../../lib/board/board-app';
import type { BoardRequest } from '../../lib/board/board-request';
import { MemoryBoardBook } from '../../lib/stores/board-book.memory';
import { RedlimitBoardModule } from '../../lib/nest/board/redlimit-board.module';

const CSRF = 'c'.repeat(43);

function get(route: string): BoardRequest {
  return {
    method: 'GET',
    route,
    base: '/ops',
    query: {},
    headers: { cookie: `${CSRF_COOKIE}=${CSRF}` },
    secure: false,
    actor: 'ada',
  };
}

describe('RedlimitBoardModule.forRoot path', () => {
  it.each(['/ops/..', '/..', '/.', '/ops/./limits'])(
    'refuses %s, a path no browser can reach (it resolves dot segments first): the boot fails naming path',
    (path) => {
      expect(() => RedlimitBoardModule.forRoot({ path, authorize: () => true })).toThrow(/path/);
    },
  );

  it.each(['', 'ops', '/ops/', '/ops//limits', '/ops/:id', '/ops/*', '/ops/limits?x', '/o ps'])(
    'refuses %j (defence holds)',
    (path) => {
      expect(() => RedlimitBoardModule.forRoot({ path, authorize: () => true })).toThrow(/path/);
    },
  );
});

describe('sameOrigin: what a browser can send with a POST (defence holds)', () => {
  it.each<[string, boolean, Record<string, string>]>([
    ['same-origin', true, { 'sec-fetch-site': 'same-origin', host: 'a.example' }],
    ['typed in the address bar (none)', true, { 'sec-fetch-site': 'none' }],
    ['same-site subdomain', false, { 'sec-fetch-site': 'same-site', origin: 'https://a.example' }],
    [
      'cross-site',
      false,
      { 'sec-fetch-site': 'cross-site', origin: 'https://a.example', host: 'a.example' },
    ],
    [
      'Origin of another host, old browser',
      false,
      { origin: 'https://evil.example', host: 'a.example' },
    ],
    [
      'Origin of another port, old browser',
      false,
      { origin: 'http://a.example:8080', host: 'a.example' },
    ],
    ['Origin null (sandboxed iframe), old browser', false, { origin: 'null', host: 'a.example' }],
    ['Origin not a URL', false, { origin: 'a.example', host: 'a.example' }],
    ['same host, old browser', true, { origin: 'https://a.example', host: 'a.example' }],
  ])('%s: allowed %s', (_name, expected, headers) => {
    expect(sameOrigin(headers)).toBe(expected);
  });
});

describe('caller keys an attacker chose, as the pages show them', () => {
  it('shows bidi overrides and invisible characters of a key visibly, so one key cannot pose as another', async () => {
    // `tag:` + RIGHT-TO-LEFT OVERRIDE + a reversed address: shown, it reads "tag:alice@example.com".
    const posing = 'tag:\u202emoc.elpmaxe@ecila';
    // A zero-width space: shown, it reads exactly as the real key next to it.
    const twin = 'email:5f4dcc3b5aa765d6\u200b';
    const book = new MemoryBoardBook(() => 1_800_000_000_000);
    await book.record({
      counts: [],
      refusals: [posing, twin].map((key) => ({
        policy: 'login',
        kind: 'refused' as const,
        key,
        limit: 5,
        windowMs: 60_000,
        count: 50,
      })),
      lockouts: [],
      cards: [],
    });
    const board = new BoardApp({ book, limiters: () => [], via: 'board' });
    // The policy is no app's here: the page lists it from what was recorded.
    await book.record({
      counts: [],
      refusals: [],
      lockouts: [],
      cards: [
        {
          name: 'login',
          algorithm: 'fixed-window',
          limits: [{ limit: 5, windowMs: 60_000 }],
          shadow: false,
          failMode: 'open',
        },
      ],
    });
    const { body } = await board.handle(get('refusing'));
    expect(body).toContain('<h2>login</h2>');
    const shown = [...body.matchAll(/<bdi class="key">([^<]*)<\/bdi>/g)].map(([, key]) => key!);
    expect(shown).toHaveLength(2);
    for (const key of shown) expect(key).not.toMatch(/[\u200b-\u200f\u202a-\u202e\u2066-\u2069]/);
  });
});

describe('the Locked out page', () => {
  it('says when it shows only part of the lockouts (501 running, the longest last)', async () => {
    const now = 1_800_000_000_000;
    const book = new MemoryBoardBook(() => now);
    // 500 one-off lockouts of 10 min started by the attacker, and the victim-of-interest's
    // escalated one (level 4, 80 min): soonest end first, it is row 501 of 500.
    const lockouts = Array.from({ length: 500 }, (_, i) => ({
      policy: 'login',
      key: `email:${i.toString(16).padStart(16, '0')}`,
      until: now + 600_000,
      since: now,
    }));
    lockouts.push({
      policy: 'login',
      key: 'email:ffffffffffffffff',
      until: now + 4_800_000,
      since: now,
    });
    await book.record({ counts: [], refusals: [], lockouts, cards: [] });
    const board = new BoardApp({ book, limiters: () => [], via: 'board' });
    const { body } = await board.handle(get('locked'));
    const rows = body.match(/<bdi class="key">/g) ?? [];
    expect(rows).toHaveLength(500);
    // The page says rows are missing: on-call does not read this as every lockout.
    expect(body).toMatch(/Showing the 500 lockouts ending soonest: more are running/);
  });
});
