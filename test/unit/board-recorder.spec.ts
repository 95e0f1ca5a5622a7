import {
  type BoardBook,
  type BoardWrite,
  type Decision,
  DecisionEvents,
  Limiter,
  MemoryStore,
  type PolicyOptions,
  type SpendRequest,
  type Store,
} from '../../lib';
import {
  BoardRecorder,
  MAX_PENDING_LOCKOUTS,
  MAX_PENDING_REFUSALS,
  policyCard,
} from '../../lib/board/board-recorder';
import { TestClock } from '../support/backends';

// The ops board's recorder (lib/board/board-recorder.ts) on a MemoryStore, with real limiters and
// decision events: what it counts from the decisions, what it writes to the book at each flush,
// and that nothing it does (or another watcher does) reaches a decision.

const MINUTE = 60_000;

/** Two calls per minute per key. */
const login: PolicyOptions = { name: 'login', algorithm: 'fixed-window', limit: 2, window: '1m' };
/** One call per 10 s, in shadow mode. */
const trial: PolicyOptions = {
  name: 'trial',
  algorithm: 'sliding-window',
  limit: 1,
  window: '10s',
  shadow: true,
};
/** One call per minute; a refusal locks the key out for a minute, then 2. */
const otp: PolicyOptions = {
  name: 'otp',
  algorithm: 'fixed-window',
  limit: 1,
  window: '1m',
  block: { duration: '1m', factor: 2, max: '2m', forgetAfter: '10m' },
};

/** A store that fails while `down` (its fallback, for fail mode `memory`, is a MemoryStore). */
class SwitchableStore implements Store {
  down = false;
  constructor(private readonly inner: MemoryStore) {}
  consume(request: SpendRequest) {
    return this.down ? Promise.reject(new Error('down')) : this.inner.consume(request);
  }
  peek(request: SpendRequest) {
    return this.down ? Promise.reject(new Error('down')) : this.inner.peek(request);
  }
  consumeStack(requests: readonly SpendRequest[]) {
    return this.down ? Promise.reject(new Error('down')) : this.inner.consumeStack(requests);
  }
  peekStack(requests: readonly SpendRequest[]) {
    return this.down ? Promise.reject(new Error('down')) : this.inner.peekStack(requests);
  }
  refund: Store['refund'] = (request) => this.inner.refund(request);
  reset: Store['reset'] = (request) => this.inner.reset(request);
  fallback = () => this.inner.fallback();
}

/** The memory book, with every write it was given (or a book whose writes fail). */
class WatchedBook implements BoardBook {
  readonly writes: BoardWrite[] = [];
  fail: 'no' | 'reject' | 'throw' = 'no';
  constructor(private readonly inner: BoardBook) {}
  now = () => this.inner.now();
  record(write: BoardWrite): Promise<void> {
    this.writes.push(write);
    if (this.fail === 'throw') throw new Error('book broke at once');
    if (this.fail === 'reject') return Promise.reject(new Error('book unreachable'));
    return this.inner.record(write);
  }
  rates = (since: number) => this.inner.rates(since);
  topRefusals: BoardBook['topRefusals'] = (...args) => this.inner.topRefusals(...args);
  lockouts = (max: number) => this.inner.lockouts(max);
  cards = () => this.inner.cards();
  audit = (count: number) => this.inner.audit(count);
  appendAudit: BoardBook['appendAudit'] = (entry) => this.inner.appendAudit(entry);
}

/** A write's counts as `policy outcome` → count. */
function countsOf(write: BoardWrite | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const { policy, outcome, count } of write?.counts ?? []) {
    const name = `${policy} ${outcome}`;
    expect(out[name]).toBeUndefined(); // one row per policy and outcome
    out[name] = count;
  }
  return out;
}

/** A decision but its receipt (its spend id differs from store to store). */
function withoutReceipt(decision: Decision): Omit<Decision, 'receipt'> {
  return Object.fromEntries(
    Object.entries(decision).filter(([name]) => name !== 'receipt'),
  ) as Omit<Decision, 'receipt'>;
}

describe('BoardRecorder', () => {
  let clock: TestClock;
  let memory: MemoryStore;
  let store: SwitchableStore;
  let events: DecisionEvents;
  let book: WatchedBook;
  let limiters: Limiter[];
  let recorder: BoardRecorder;
  let warnings: string[];

  const limiter = (policy: PolicyOptions, options: Partial<Limiter['options']> = {}) => {
    const made = new Limiter(store, policy, { events, onStoreFailure: () => {}, ...options });
    limiters.push(made);
    return made;
  };

  beforeEach(() => {
    clock = new TestClock();
    memory = new MemoryStore({ clock: clock.read });
    store = new SwitchableStore(memory);
    events = new DecisionEvents();
    book = new WatchedBook(memory.board());
    limiters = [];
    recorder = new BoardRecorder(events, book, { limiters: () => limiters });
    warnings = [];
    jest.spyOn(process, 'emitWarning').mockImplementation((warning: string | Error) => {
      warnings.push(String(warning));
    });
  });
  afterEach(async () => {
    book.fail = 'no';
    await recorder.stop();
    jest.restoreAllMocks();
  });

  it('counts allowed, refused, blocked, shadow-refused and failed decisions per policy', async () => {
    recorder.start();
    const a = limiter(login);
    const s = limiter(trial, { onShadowRefusal: () => {} });
    const o = limiter(otp);
    const open = limiter({ ...login, name: 'open', failMode: 'open' });
    const closed = limiter({ ...login, name: 'closed', failMode: 'closed' });
    const fallback = limiter({ ...login, name: 'fallback', failMode: 'memory' });
    for (let i = 0; i < 5; i++) await a.consume('ip:1'); // 2 allowed, 3 refused
    await a.peek('ip:1'); // a peek is no decision of the fleet's
    for (let i = 0; i < 3; i++) await s.consume('ip:1'); // 1 allowed, 2 shadow-refused
    for (let i = 0; i < 4; i++) await o.consume('ip:1'); // 1 allowed, 3 blocked
    store.down = true;
    await open.consume('ip:1');
    await closed.consume('ip:1');
    await closed.consume('ip:2');
    await fallback.consume('ip:1'); // the fallback decided: allowed
    store.down = false;
    await recorder.flush();
    expect(book.writes).toHaveLength(1);
    expect(countsOf(book.writes[0])).toEqual({
      'login allowed': 2,
      'login refused': 3,
      'trial allowed': 1,
      'trial shadow-refused': 2,
      'otp allowed': 1,
      'otp blocked': 3,
      'open failed': 1,
      'closed failed': 2,
      'fallback allowed': 1,
    });
    // And the book has them.
    expect(await book.rates(clock.now)).toHaveLength(9);
  });

  it('lists a refusal under the refusing key (blockedBy), with that limit and window', async () => {
    recorder.start();
    const twoLimits = limiter({
      name: 'signup',
      algorithm: 'fixed-window',
      limits: [
        { limit: 3, window: '1h' },
        { limit: 1, window: '10s' },
      ],
    });
    expect((await twoLimits.consume(['ip:1', 'email:a'])).allowed).toBe(true);
    // email:a is over its 10 s limit; ip:2 fits.
    const refused = await twoLimits.consume(['ip:2', 'email:a']);
    expect(refused.blockedBy).toEqual({ key: 'email:a', limit: 1, windowMs: 10_000 });
    await twoLimits.consume(['ip:3', 'email:a']);
    // Later, ip:1 is refused by the hour (its third call in it): another limit, another row.
    clock.advance(10_000);
    expect((await twoLimits.consume('ip:1')).allowed).toBe(true);
    clock.advance(10_000);
    expect((await twoLimits.consume('ip:1')).allowed).toBe(true);
    clock.advance(10_000);
    const hourly = await twoLimits.consume(['ip:1', 'email:b']);
    expect(hourly.blockedBy).toEqual({ key: 'ip:1', limit: 3, windowMs: 3_600_000 });
    // Shadow refusals go to their own kind.
    const s = limiter(trial, { onShadowRefusal: () => {} });
    await s.consume('ip:9');
    await s.consume('ip:9');
    await recorder.flush();
    expect(book.writes[0]!.refusals).toEqual([
      { policy: 'signup', kind: 'refused', key: 'email:a', limit: 1, windowMs: 10_000, count: 2 },
      { policy: 'signup', kind: 'refused', key: 'ip:1', limit: 3, windowMs: 3_600_000, count: 1 },
      { policy: 'trial', kind: 'shadow', key: 'ip:9', limit: 1, windowMs: 10_000, count: 1 },
    ]);
    expect(await book.topRefusals('refused', ['signup'], 1, 10)).toEqual(
      book.writes[0]!.refusals.slice(0, 2),
    );
  });

  it('records a lockout with its end and when it was first seen, and its longest end', async () => {
    recorder.start();
    const o = limiter(otp);
    await o.consume('ip:1');
    const t0 = clock.now;
    const locked = await o.consume('ip:1');
    expect(locked.blockedUntil).toBe(t0 + MINUTE);
    clock.advance(30_000);
    const held = await o.consume('ip:1'); // refused by the same lockout
    expect(held.blockedUntil).toBe(t0 + MINUTE);
    await recorder.flush();
    expect(book.writes[0]!.lockouts).toEqual([
      { policy: 'otp', key: 'ip:1', until: t0 + MINUTE, since: t0, lastSeen: t0 + 30_000 },
    ]);
    // A lockout refuses on limit 0 (no window).
    expect(book.writes[0]!.refusals).toEqual([
      { policy: 'otp', kind: 'refused', key: 'ip:1', limit: 0, windowMs: 0, count: 2 },
    ]);
    expect(await book.lockouts(10)).toEqual([
      { policy: 'otp', key: 'ip:1', until: t0 + MINUTE, since: t0 },
    ]);
    // The next lockout is longer; between two flushes the recorder keeps the latest end and the
    // first sighting.
    clock.advance(30_000);
    const t1 = clock.now;
    await o.consume('ip:1');
    const again = await o.consume('ip:1');
    expect(again.blockedUntil).toBe(t1 + 2 * MINUTE);
    await recorder.flush();
    expect(book.writes[1]!.lockouts).toEqual([
      { policy: 'otp', key: 'ip:1', until: t1 + 2 * MINUTE, since: t1, lastSeen: t1 },
    ]);
    // Between two flushes, a lockout that ended and started again is one: its latest end, seen
    // first at the first one's start.
    const t2 = clock.now;
    await o.consume('ip:2');
    await o.consume('ip:2'); // locked out for a minute
    clock.advance(MINUTE);
    await o.consume('ip:2');
    await o.consume('ip:2'); // then for two
    await recorder.flush();
    expect(book.writes[2]!.lockouts).toEqual([
      {
        policy: 'otp',
        key: 'ip:2',
        until: clock.now + 2 * MINUTE,
        since: t2,
        lastSeen: clock.now,
      },
    ]);
    // A lockout in shadow mode is a shadow refusal, not a lockout.
    const s = limiter({ ...otp, name: 'otp-shadow', shadow: true }, { onShadowRefusal: () => {} });
    await s.consume('ip:1');
    const shadowLocked = await s.consume('ip:1');
    expect(shadowLocked.shadowRefused).toBe(true);
    expect(shadowLocked.blockedUntil).toBeDefined();
    await recorder.flush();
    expect(book.writes[3]!.lockouts).toEqual([]);
    expect(countsOf(book.writes[3])).toEqual({
      'otp-shadow allowed': 1,
      'otp-shadow shadow-refused': 1,
    });
  });

  it('flush() writes what was counted and starts over; with nothing counted, writes nothing', async () => {
    recorder.start();
    const a = limiter(login);
    await a.consume('ip:1');
    await recorder.flush();
    expect(countsOf(book.writes[0])).toEqual({ 'login allowed': 1 });
    expect(book.writes[0]!.cards).toEqual([policyCard(a)]); // the first flush publishes them
    await recorder.flush();
    expect(book.writes).toHaveLength(1);
    await a.consume('ip:1');
    await a.consume('ip:1');
    await recorder.flush();
    expect(book.writes).toHaveLength(2);
    expect(countsOf(book.writes[1])).toEqual({ 'login refused': 1, 'login allowed': 1 });
    expect(book.writes[1]!.cards).toEqual([]);
    expect(await book.rates(clock.now)).toEqual(
      expect.arrayContaining([
        { at: clock.now, policy: 'login', outcome: 'allowed', count: 2 },
        { at: clock.now, policy: 'login', outcome: 'refused', count: 1 },
      ]),
    );
    // The policies again every 15 flushes.
    for (let i = 0; i < 12; i++) await recorder.flush();
    expect(book.writes).toHaveLength(2);
    await recorder.flush();
    expect(book.writes).toHaveLength(3);
    expect(book.writes[2]).toEqual({
      counts: [],
      refusals: [],
      lockouts: [],
      cards: [policyCard(a)],
    });
  });

  it('flushes on its own every flushMs', async () => {
    jest.useFakeTimers();
    try {
      const timed = new BoardRecorder(events, book, { limiters: () => limiters, flushMs: 500 });
      timed.start();
      const a = limiter(login);
      await a.consume('ip:1');
      jest.advanceTimersByTime(499);
      expect(book.writes).toHaveLength(0);
      jest.advanceTimersByTime(1);
      expect(book.writes).toHaveLength(1);
      await timed.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('a book that fails does not throw, loses that flush, and is warned about at most once a minute', async () => {
    let now = 1_000_000;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
    recorder.start();
    const a = limiter(login);
    book.fail = 'reject';
    await a.consume('ip:1');
    await expect(recorder.flush()).resolves.toBeUndefined();
    expect(warnings).toEqual([
      "redlimit: the ops board's figures could not be written: book unreachable",
    ]);
    now += 59_999;
    await a.consume('ip:1');
    await expect(recorder.flush()).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
    now += 1;
    await a.consume('ip:1');
    await expect(recorder.flush()).resolves.toBeUndefined();
    expect(warnings).toHaveLength(2);
    // What failed is not written again.
    book.fail = 'no';
    await recorder.flush();
    expect(book.writes).toHaveLength(3);
    expect(await book.rates(0)).toEqual([]);
  });

  it('flush() does not throw when the book throws at once (a MemoryStore whose clock broke)', async () => {
    recorder.start();
    const a = limiter(login);
    await a.consume('ip:1');
    book.fail = 'throw';
    const thrown = async (flush: () => Promise<void>) => {
      try {
        await flush();
        return undefined;
      } catch (error) {
        return String(error);
      }
    };
    const custom = await thrown(() => recorder.flush());
    // The memory book itself, its store's clock broken after the decision: MemoryBoardBook.record
    // reads it synchronously. (From the recorder's timer, a throw is an uncaught exception.)
    let reading = clock.now;
    const broken = new MemoryStore({ clock: () => reading });
    const other = new BoardRecorder(events, broken.board(), { limiters: () => [] });
    other.start();
    await a.consume('ip:2');
    reading = Number.NaN;
    const memoryBook = await thrown(() => other.stop());
    expect({ custom, memoryBook }).toEqual({ custom: undefined, memoryBook: undefined });
  });

  it('stop() writes what is left, stops watching and flushing', async () => {
    jest.useFakeTimers();
    try {
      recorder.start();
      const a = limiter(login);
      await a.consume('ip:1');
      expect(events.watcher).toBeDefined();
      await recorder.stop();
      expect(book.writes).toHaveLength(1);
      expect(countsOf(book.writes[0])).toEqual({ 'login allowed': 1 });
      expect(events.watcher).toBeUndefined();
      await a.consume('ip:1');
      jest.advanceTimersByTime(10 * MINUTE);
      await recorder.flush();
      expect(book.writes).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('stop() waits for a flush under way, then writes what came after it', async () => {
    recorder.start();
    const a = limiter(login);
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const record = book.record.bind(book);
    jest.spyOn(book, 'record').mockImplementationOnce(async (write) => {
      await slow;
      return record(write);
    });
    await a.consume('ip:1');
    const first = recorder.flush();
    await a.consume('ip:2');
    await a.consume('ip:2');
    let stopped = false;
    const stopping = recorder.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release();
    await first;
    await stopping;
    expect(book.writes.map(countsOf)).toEqual([{ 'login allowed': 1 }, { 'login allowed': 2 }]);
  });

  it(`writes a policy's list of refused keys when it holds ${MAX_PENDING_REFUSALS}: every key and count is written, none crowded out`, async () => {
    recorder.start();
    const one: PolicyOptions = { name: 'one', algorithm: 'fixed-window', limit: 1, window: '1h' };
    const other: PolicyOptions = { ...one, name: 'other' };
    const a = limiter(one);
    const b = limiter(other);
    await a.consume('hot');
    for (let i = 0; i < 5; i++) await a.consume('hot'); // refused 5 times
    await b.consume('victim');
    for (let i = 0; i < 3; i++) await b.consume('victim'); // refused 3 times, another policy
    const flood = 3 * MAX_PENDING_REFUSALS;
    for (let i = 0; i < flood; i++) await a.consume(`k${i}`);
    for (let i = 0; i < flood; i++) await a.consume(`k${i}`); // each refused once
    await recorder.flush();
    expect(book.writes.length).toBeGreaterThan(1); // written early, as the list filled
    const total: Record<string, number> = {};
    for (const write of book.writes) {
      for (const [name, count] of Object.entries(countsOf(write))) {
        total[name] = (total[name] ?? 0) + count;
      }
      const perPolicy = (policy: string) => write.refusals.filter((r) => r.policy === policy);
      expect(perPolicy('one').length).toBeLessThanOrEqual(MAX_PENDING_REFUSALS);
    }
    expect(total).toEqual({
      'one allowed': flood + 1,
      'one refused': flood + 5,
      'other allowed': 1,
      'other refused': 3,
    });
    const refusals = book.writes.flatMap((w) => w.refusals);
    const sum = (policy: string, key: string) =>
      refusals.filter((r) => r.policy === policy && r.key === key).reduce((n, r) => n + r.count, 0);
    expect(sum('one', 'hot')).toBe(5);
    expect(sum('other', 'victim')).toBe(3);
    expect(sum('one', `k${flood - 1}`)).toBe(1);
  });

  it(`writes a policy's lockouts when it holds ${MAX_PENDING_LOCKOUTS}: every lockout is written`, async () => {
    recorder.start();
    const o = limiter(otp);
    const total = MAX_PENDING_LOCKOUTS + 2;
    for (let i = 0; i < total; i++) await o.consume(`k${i}`);
    for (let i = 0; i < total; i++) await o.consume(`k${i}`);
    await recorder.flush();
    for (const write of book.writes) {
      expect(write.lockouts.length).toBeLessThanOrEqual(MAX_PENDING_LOCKOUTS);
    }
    const keys = new Set(book.writes.flatMap((w) => w.lockouts.map((l) => l.key)));
    expect(keys.size).toBe(total);
  });

  it('keeps the heavy hitters while a write is under way (Misra-Gries): a key refused more than 1/1,000 of the refusals stays listed', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow: BoardBook = Object.assign(Object.create(book) as BoardBook, {
      record: async (write: BoardWrite) => {
        book.writes.push(write);
        await held;
      },
    });
    const r = new BoardRecorder(events, slow, { limiters: () => [] });
    r.start();
    try {
      const one: PolicyOptions = { name: 'one', algorithm: 'fixed-window', limit: 1, window: '1h' };
      const a = limiter(one);
      await a.consume('warm');
      await a.consume('warm'); // refused: something to write
      const writing = r.flush(); // a write under way until released
      await a.consume('victim');
      for (let round = 0; round < 10; round++) {
        await a.consume('victim'); // refused
        for (let j = 0; j < 500; j++) {
          const key = `f${round}-${j}`;
          await a.consume(key);
          await a.consume(key); // refused once
        }
      }
      release();
      await writing;
      await r.flush();
      const victim = book.writes
        .flatMap((w) => w.refusals)
        .filter((x) => x.key === 'victim')
        .reduce((n, x) => n + x.count, 0);
      expect(victim).toBeGreaterThanOrEqual(1); // listed (its count a lower bound)
      expect(victim).toBeLessThanOrEqual(10);
    } finally {
      await r.stop();
    }
  });

  it('counts each part of a stacked decision once, and not a part another part refused', async () => {
    recorder.start();
    const a = limiter(login);
    const b = limiter({ ...login, name: 'plan', limit: 1 });
    const s = limiter({ ...trial, limit: 5 }, { onShadowRefusal: () => {} });
    const parts = (key: string) => [
      { limiter: a, keys: key },
      { limiter: b, keys: key },
      { limiter: s, keys: key },
    ];
    expect((await Limiter.consumeAll(parts('ip:1'))).allowed).toBe(true);
    const refused = await Limiter.consumeAll(parts('ip:1')); // plan refuses
    expect(refused.allowed).toBe(false);
    expect(refused.refusedBy?.policy).toBe('plan');
    await recorder.flush();
    expect(countsOf(book.writes[0])).toEqual({
      'login allowed': 1,
      'plan allowed': 1,
      'plan refused': 1,
      'trial allowed': 1,
    });
    expect(book.writes[0]!.refusals).toEqual([
      { policy: 'plan', kind: 'refused', key: 'ip:1', limit: 1, windowMs: MINUTE, count: 1 },
    ]);
  });

  it('a watcher that throws changes no decision, nor what the recorder counts', async () => {
    const boom = jest.fn(() => {
      throw new Error('watcher broke');
    });
    events.watch(boom);
    recorder.start();
    const a = limiter(login);
    const b = limiter({ ...login, name: 'plan' });
    const plain = new Limiter(new MemoryStore({ clock: clock.read }), login);
    const decisions: Decision[] = [];
    for (let i = 0; i < 3; i++) decisions.push(await a.consume('ip:1'));
    const stacked = await Limiter.consumeAll([
      { limiter: a, keys: 'ip:2' },
      { limiter: b, keys: 'ip:2' },
    ]);
    expect(boom).toHaveBeenCalledTimes(5);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(stacked.allowed).toBe(true);
    // The same decisions as without any watcher.
    const unwatched: Decision[] = [];
    for (let i = 0; i < 3; i++) unwatched.push(await plain.consume('ip:1'));
    expect(decisions.map(withoutReceipt)).toEqual(unwatched.map(withoutReceipt));
    expect(
      warnings.filter((w) => w.includes('a decision watcher threw: watcher broke')),
    ).toHaveLength(5);
    await recorder.flush();
    expect(countsOf(book.writes[0])).toEqual({
      'login allowed': 3,
      'login refused': 1,
      'plan allowed': 1,
    });
  });
});
