// Review of "outcome markers by run" (5964eb0): lib/stores/lost-replies.ts tracks runs, not
// spends; lib/stores/storage-key.util.ts names one outcome hash per process and Cluster slot.
import { monotonicNow } from '../../lib/core/clock.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { LostReplies, MAX_LOST_SPENDS, type RunSpend } from '../../lib/stores/lost-replies';
import { outcomeHashKey, storageKeysWithLedgers } from '../../lib/stores/storage-key.util';
import type { SpendRequest } from '../../lib/stores/store.interface';

async function until(done: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const request = (deadlineAt: number): SpendRequest => ({
  policy: 'p',
  algorithm: 'fixed-window',
  limits: [{ limit: 5, windowMs: 60_000, burst: 5 }],
  keys: ['k'],
  cost: 1,
  deadlineAt,
});

const spendOf = (spendId: string, deadlineAt: number): RunSpend => ({
  request: request(deadlineAt),
  spend: true,
  spendId,
  deadline: 1,
});

/** The runs a LostReplies still holds (internal: what it keeps in memory). */
const heldRuns = (lost: LostReplies): number =>
  (lost as unknown as { runs: Map<string, unknown> }).runs.size;

describe('review: run markers, a run its client never answers', () => {
  // ioredis with autoResendUnfulfilledCommands: false drops the commands of a broken connection
  // without ever settling their promises (see lost-reply.spec.ts): such a run is neither answered
  // nor failed, its spends count as lost once overdue. Before 5964eb0 the in-flight entry was
  // dropped when it was lost; now the Run stays `waiting` for good, so `close` never removes it:
  // every dropped run is kept in memory (and scanned by every pass) for the life of the process.
  it('once its lost spends are settled, the run is not kept in memory', async () => {
    const lost = new LostReplies(() => Promise.resolve(1));
    for (let i = 0; i < 50; i++) {
      lost.sent('h', `s${i}`, [spendOf(`s${i}`, monotonicNow() - 5_000)]);
    }
    await until(() => lost.counts.refunded === 50);
    expect(lost.counts.pending).toBe(0);
    expect(heldRuns(lost)).toBe(0);
  });

  // The same run: its lost spend is forgotten (too many lost spends wait, or the store failed until
  // Redis forgot its marker) before it was settled. Its entry stays in the run's field, and only
  // `close` would queue the field for deletion: it never does for a run still `waiting`. The hash
  // is kept 60 s after its LATEST write, so under steady load the field is never deleted (before,
  // each marker was a key of its own that expired within 60 s).
  it('a forgotten lost spend of it: its field is still queued for deletion', async () => {
    // The store fails: nothing is ever settled, every lost spend waits.
    const lost = new LostReplies(() => Promise.reject(new Error('Connection is closed.')));
    const past = monotonicNow() - 5_000;
    lost.sent('h', 'b*', [spendOf('b', past)]);
    for (let i = 0; i < MAX_LOST_SPENDS; i++) lost.sent('h', `s${i}`, [spendOf(`s${i}`, past)]);
    await until(() => lost.counts.forgotten === 1);
    expect(lost.takeDone('h').replace(/^\+/, '').split(',')).toContain('b*');
  });
});

describe('review: run markers, the outcome hash on Cluster', () => {
  // The hash must be in the slot of the keys it is declared with (one script run). The store finds
  // the slot from the first stored key (which honours the FIRST `{` of the whole key, prefix
  // included) and names the hash `<prefix>{<tag of that slot>}!<process tag>`. A prefix with an
  // unmatched `{` (accepted by RedisStore) moves the hash's tag: every spend on Cluster fails with
  // CROSSSLOT. Before 5964eb0 the marker was `<prefix>{<caller key's tag>}!<id>`, in the same
  // slot as the keys whatever the prefix.
  it.each(['rl{:', '{', 'app{x:'])('prefix %p: the hash is in the slot of the keys', (prefix) => {
    const key = storageKeysWithLedgers(prefix, ['ip:203.0.113.7'], 'p', 1)[0]!;
    const slot = clusterSlot(key);
    expect(clusterSlot(outcomeHashKey(prefix, slot, 'AbCdEfGh'))).toBe(slot);
  });
});

describe('LostReplies: what a run sends for its outcome hash', () => {
  afterEach(() => jest.useRealTimers());

  it('a refresh on the first run and every 20 s; finished fields sixteen or more at a time', () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    const lost = new LostReplies(() => Promise.resolve(1));
    expect(lost.takeDone('h')).toBe('+');
    for (let i = 0; i < 15; i++) lost.prune('h', `f${i}`);
    expect(lost.takeDone('h')).toBe(''); // fifteen wait
    lost.prune('h', 'f15');
    expect(lost.takeDone('h').split(',')).toHaveLength(16);
    expect(lost.takeDone('h')).toBe('');
    lost.prune('h', 'g');
    jest.advanceTimersByTime(19_999);
    expect(lost.takeDone('h')).toBe('');
    jest.advanceTimersByTime(1);
    expect(lost.takeDone('h')).toBe('+g'); // with the refresh, whatever waits
    expect(lost.takeDone('other')).toBe('+'); // each hash its own
  });

  it('given back after a failed run: the refresh is asked again, the fields sent again', () => {
    const lost = new LostReplies(() => Promise.resolve(1));
    for (let i = 0; i < 16; i++) lost.prune('h', `f${i}`);
    const taken = lost.takeDone('h');
    expect(taken.startsWith('+f0,')).toBe(true);
    lost.giveBack('h', taken);
    expect(lost.takeDone('h')).toBe(taken);
  });
});
