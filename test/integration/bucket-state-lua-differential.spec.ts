import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type Redis from 'ioredis';
import { createTestClient } from '../support/redis';

// lua/lib/token-bucket-state.lua and lua/lib/gcra-state.lua against the versions before 75c899d
// (one match of the fields and one conversion each instead of a split and tonumber; a decision's
// reading skips prevM and prevLastAt and fills a table it keeps; nil for a bucket full again):
// the same state writes the same text, and any text (as any version wrote it, or not) reads as
// the same state, or as none when either reads none or a full bucket (lib/bucket.lua's load
// treats both alike). Stored state is shared by processes of both versions during a rolling
// deploy.

const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 200);
const root = join(__dirname, '..', '..');
const lua = (path: string) =>
  readFileSync(join(root, path), 'utf8').replace(/^--#include .*$/gm, '');
const PENDING = lua('lua/lib/pending.lua');
const STATES = {
  'token-bucket': {
    now: lua('lua/lib/token-bucket-state.lua'),
    before: lua('test/integration/fixtures/token-bucket-state-before-75c899d.lua'),
  },
  gcra: {
    now: lua('lua/lib/gcra-state.lua'),
    before: lua('test/integration/fixtures/gcra-state-before-75c899d.lua'),
  },
} as const;
type Kind = keyof typeof STATES;

// The prelude's `now`, lib/pending.lua and a state encoding, then one call:
//   ARGV now, 'decode', capacity, limit, raw, full ('1' or '')
//   ARGV now, 'encode', capacity, limit, b, busyStart, m, lastAt, prevM, prevLastAt, pending…
// A decoded state comes back as text ('%.17g'), or 'none' for no state or a full bucket.
const script = (state: string): string => `
local now = tonumber(ARGV[1])
${PENDING}
${state}
local capacity, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local function n(x) return string.format('%.17g', x) end
if ARGV[2] == 'decode' then
  local full = ARGV[6] == '1'
  -- A decision's reading fills a table it keeps: here one a previous reading left full of values.
  local into = not full and { b = 7, busyStart = 7, m = 7, lastAt = 7, pending = { { id = 'old', at = 7, seg = 7, expires = 7 } } }
  local s = decode(ARGV[5], capacity, limit, into or nil)
  if not s or s.b <= 0 then return 'none' end
  local out = { n(s.b), n(s.busyStart), n(s.m), n(s.lastAt) }
  if full then out[5], out[6] = n(s.prevM), n(s.prevLastAt) end
  for _, e in ipairs(s.pending) do
    out[#out + 1] = e.id .. '/' .. n(e.at) .. '/' .. n(e.seg) .. '/' .. n(e.expires)
  end
  return out
end
local s = {
  b = tonumber(ARGV[5]), busyStart = tonumber(ARGV[6]), m = tonumber(ARGV[7]),
  lastAt = tonumber(ARGV[8]), prevM = tonumber(ARGV[9]), prevLastAt = tonumber(ARGV[10]),
  pending = {},
}
for i = 11, #ARGV do
  local id, at, seg, expires = string.match(ARGV[i], '^(.-)/(.-)/(.-)/(.-)$')
  s.pending[#s.pending + 1] = { id = id, at = tonumber(at), seg = tonumber(seg), expires = tonumber(expires) }
end
return encode(s, capacity, limit)
`;

interface State {
  b: number;
  busyStart: number;
  m: number;
  lastAt: number;
  prevM: number;
  prevLastAt: number;
  pending: Array<{ id: string; at: number; seg: number; expires: number }>;
}

let client: Redis;

beforeAll(() => {
  client = createTestClient();
});
afterAll(async () => {
  await client.quit();
});

async function run(source: string, args: Array<string | number>): Promise<unknown> {
  try {
    return await client.eval(source, 0, ...args);
  } catch (error) {
    return `error: ${String((error as Error).message).split(' script')[0]}`;
  }
}

/** Both versions' reading of `raw`, full and not: the same. */
async function expectSameReading(
  kind: Kind,
  raw: string,
  now: number,
  capacity: number,
  limit: number,
): Promise<void> {
  for (const full of ['1', '']) {
    const args = [now, 'decode', capacity, limit, raw, full];
    // (a reading that is not `full` is compared without prevM and prevLastAt: the script leaves them out)
    const expected = await run(script(STATES[kind].before), args);
    const after = await run(script(STATES[kind].now), args);
    expect({ kind, raw, now, capacity, limit, full, reading: after }).toEqual({
      kind,
      raw,
      now,
      capacity,
      limit,
      full,
      reading: expected,
    });
  }
}

async function encodeBoth(
  kind: Kind,
  s: State,
  now: number,
  capacity: number,
  limit: number,
): Promise<[unknown, unknown]> {
  const args = [
    now,
    'encode',
    capacity,
    limit,
    s.b,
    s.busyStart,
    s.m,
    s.lastAt,
    s.prevM,
    s.prevLastAt,
    ...s.pending.map((e) => `${e.id}/${e.at}/${e.seg}/${e.expires}`),
  ];
  return [await run(script(STATES[kind].before), args), await run(script(STATES[kind].now), args)];
}

const NOW = 1_764_700_000_000;
const instant = fc.oneof(
  fc.constant(-1),
  fc.constantFrom(NOW - 1, NOW, NOW + 1), // ages of 1, 0 and (clamped) 0
  fc.integer({ min: NOW - 100_000_000, max: NOW + 5_000 }), // (later than now: a clock stepped back)
);
const state = (capacity: number): fc.Arbitrary<State> =>
  fc.record({
    b: fc.oneof(
      fc.integer({ min: 1, max: capacity }),
      fc.integer({ min: capacity, max: capacity * 3 }), // a debt (a spend adjusted up)
    ),
    busyStart: instant,
    m: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: capacity })),
    lastAt: instant,
    prevM: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: capacity })),
    prevLastAt: instant,
    pending: fc.array(
      fc.record({
        id: fc.stringMatching(/^[0-9a-z]{1,12}$/),
        at: fc.integer({ min: NOW - 10_000, max: NOW + 100 }),
        seg: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: capacity })),
        expires: fc.integer({ min: NOW - 100, max: NOW + 10_000 }),
      }),
      { maxLength: 3 },
    ),
  });
/** Policies: limit, window, burst; capacity = burst × window (< 2^53, as the store checks). */
const policy = fc.oneof(
  fc.constant({ limit: 1_000_000, window: 86_400_000, burst: 1_000_000 }),
  fc.constant({ limit: 1_000_000, window: 3_600_000, burst: 1_000_000 }),
  fc.constant({ limit: 10, window: 60_000, burst: 10 }),
  fc.constant({ limit: 3, window: 7_000, burst: 5 }),
  fc.record({
    limit: fc.integer({ min: 1, max: 1_000_000 }),
    window: fc.integer({ min: 1, max: 1_000_000_000 }),
    burst: fc.integer({ min: 1, max: 1_000 }),
  }),
);

describe.each(Object.keys(STATES) as Kind[])(
  'lib/%s-state.lua against the version before 75c899d',
  (kind) => {
    it('writes the same text for the same state, and reads it back the same, now and later', async () => {
      await fc.assert(
        fc.asyncProperty(
          policy.chain((p) =>
            fc.tuple(
              fc.constant(p),
              state(p.burst * p.window),
              fc.integer({ min: -5_000, max: 200_000 }),
            ),
          ),
          async ([p, s, later]) => {
            const capacity = p.burst * p.window;
            const [before, after] = await encodeBoth(kind, s, NOW, capacity, p.limit);
            expect(after).toEqual(before);
            expect(typeof after).toBe('string');
            await expectSameReading(kind, after as string, NOW, capacity, p.limit);
            await expectSameReading(kind, after as string, NOW + later, capacity, p.limit);
          },
        ),
        { numRuns: RUNS },
      );
    });

    it('reads any text as the version before did: other formats, signs, spaces, hex, junk', async () => {
      const capacity = 10 * 60_000;
      const texts = [
        '',
        ':',
        '::::::',
        '1:2:3:4:5:6',
        '1:2:3:4:5:6:7:8:9',
        `599000:${NOW}:0:-1:0:-1:-1`,
        `599000:${NOW}:0:-1:0:-1:-1:`,
        `599000:${NOW}:0:-1:0:-1:-1::`,
        `599000:${NOW}:0:-1:0:-1:-1:a/0/-1/100`,
        `599000:${NOW}:0:-1:0:-1:-1:a/0/-1/100,b/1/2/3`,
        `599000:${NOW}:0:-1:0:-1:-1:a/0/-1/100:`,
        `599000:${NOW}:0:-1:0:-1:-1:a/0/-1/100:x`,
        `599000:${NOW}:0:-1:0:-1:-1:junk`,
        `599000::${NOW}:0:-1:0:-1:-1`, // an empty field: the split skips it
        `:599000:${NOW}:0:-1:0:-1:-1`,
        `599000:${NOW}:0:-1:0`, // the five fields of an older version
        `599000:${NOW}:0:-1`, // the four fields of the first
        `-5000:${NOW}:10:0:3:-1:-1`, // a debt: tokens below zero
        `-0:${NOW}:-0:-0:-0:-0:-0`,
        `000599000:0${NOW}:007:08:09:010:011`,
        `599000.5:${NOW}:0:-1:0:-1:-1`,
        `5.99e5:${NOW}:0:-1:0:-1:-1`,
        `0x10:${NOW}:0:-1:0:-1:-1`,
        ` 599000:${NOW}:0:-1:0:-1:-1`,
        `599000 :${NOW}:0:-1:0:-1:-1`,
        `+599000:${NOW}:0:-1:0:-1:-1`,
        `--1:${NOW}:0:-1:0:-1:-1`,
        `-:${NOW}:0:-1:0:-1:-1`,
        `599000:${NOW}:0:-1:0:-1:1e999`,
        `599000:${NOW}:0:-1:0:-1:nan`,
        `12345678901234567890123:${NOW}:0:-1:0:-1:-1`,
        `599000:${NOW + 1_000}:-2:-1:-7:-1:-1`,
        `1:${NOW}:0:-1:0:-1:-1`,
        `599999:${NOW - 1}:0:-1:0:-1:-1`, // full again a ms ago
        `${capacity}:${NOW}:0:-1:0:-1:-1`, // full
      ];
      for (const raw of texts) {
        await expectSameReading(kind, raw, NOW, capacity, 10);
        await expectSameReading(kind, raw, NOW - 5_000, capacity, 10);
      }
    });

    it('reads random text as the version before did', async () => {
      const piece = fc.oneof(
        fc.constantFrom(':', '-', '/', ',', '0', '1', '9', 'x', ' ', '.', 'e', '+'),
        fc.integer({ min: -1, max: 1_000_000 }).map(String),
        fc.constant(String(NOW)),
      );
      const junk = fc.array(piece, { maxLength: 24 }).map((parts) => parts.join(''));
      // Mostly near the written form: 5 to 9 fields, numbers or junk, a pending list or junk.
      const field = fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: -1, max: 10 * 60_000 }).map(String) },
        { weight: 1, arbitrary: fc.constant(String(NOW)) },
        { weight: 1, arbitrary: fc.array(piece, { maxLength: 3 }).map((parts) => parts.join('')) },
        { weight: 1, arbitrary: fc.constantFrom('a/0/-1/100', 'a/0/-1/100,b/-3/7/x', '/1/2/3') },
      );
      const fields = fc.array(field, { minLength: 5, maxLength: 9 }).map((list) => list.join(':'));
      await fc.assert(
        fc.asyncProperty(fc.oneof(junk, fields), async (raw) => {
          await expectSameReading(kind, raw, NOW, 10 * 60_000, 10);
        }),
        { numRuns: RUNS },
      );
    });
  },
);
