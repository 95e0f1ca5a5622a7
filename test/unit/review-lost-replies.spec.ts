// Review of LostReplies (lib/stores/lost-replies.ts): a spend lost while a settling pass is under
// way must be settled soon after, not only when the pass's next planned time comes (it could be a
// long wait: a spend still in flight far from its deadline, or without one). Its marker is kept
// 60 s at most: waiting that long leaves it forgotten, charged.
import { monotonicNow } from '../../lib/core/clock.util';
import { LostReplies, type LostSpend } from '../../lib/stores/lost-replies';
import type { SpendRequest } from '../../lib/stores/store.interface';

async function until(done: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// A run of one spend (a lone decision), its field named by its id, as the store sends it.
const sendOne = (lost: LostReplies, spendId: string, deadlineAt: number): void =>
  lost.sent('h', spendId, [{ request: request(deadlineAt), spend: true, spendId, deadline: 1 }]);

const request = (deadlineAt: number | undefined): SpendRequest => ({
  policy: 'p',
  algorithm: 'fixed-window',
  limits: [{ limit: 5, windowMs: 60_000, burst: 5 }],
  keys: ['k'],
  cost: 1,
  ...(deadlineAt !== undefined && { deadlineAt }),
});

describe('review: LostReplies, a spend lost during a settling pass', () => {
  it('is settled soon, not at the pass’s far next time', async () => {
    let releaseFirst: (n: number) => void = () => {};
    const settled: string[] = [];
    const lost = new LostReplies((spend: LostSpend) => {
      settled.push(spend.spendId);
      if (spend.spendId === 'a') return new Promise<number>((r) => (releaseFirst = r));
      return Promise.resolve(-2);
    });
    const lostError = new Error('Connection is closed.');
    // In flight, far from its deadline: the pass under way plans its next run then.
    sendOne(lost, 'far', monotonicNow() + 50_000);
    sendOne(lost, 'a', monotonicNow() - 5_000);
    lost.failed('a', lostError);
    await until(() => settled.includes('a')); // the pass is under way, waiting on 'a'
    sendOne(lost, 'c', monotonicNow() - 5_000);
    lost.failed('c', lostError); // lost while the pass runs
    releaseFirst(1);
    await until(() => settled.includes('c'));
    expect(lost.counts).toMatchObject({ refunded: 1, notRun: 1, forgotten: 0 });
    lost.answered('far');
  });

  it('answered while its settlement runs: reported not allowed, and settled again if that fails', async () => {
    let failFirst: (error: Error) => void = () => {};
    const calls: string[] = [];
    const lost = new LostReplies((spend: LostSpend) => {
      calls.push(spend.spendId);
      if (calls.length === 1) return new Promise<number>((_, reject) => (failFirst = reject));
      return Promise.resolve(1);
    });
    sendOne(lost, 'a', monotonicNow() - 5_000);
    lost.failed('a', new Error('Connection is closed.'));
    await until(() => calls.length === 1);
    // Its reply comes after all: the settlement under way gives it back.
    expect(lost.answered('a')).toEqual(new Set(['a']));
    failFirst(new Error('Connection is closed.'));
    await until(() => calls.length === 2);
    await until(() => lost.counts.pending === 0);
    expect(lost.counts).toMatchObject({ refunded: 1, forgotten: 0 });
  });
});

describe('LostReplies, a settlement that never answers', () => {
  // A client may drop a command of a broken connection without ever settling its promise (ioredis
  // with autoResendUnfulfilledCommands: false): unbounded, that settlement would hold the pass,
  // and every later lost spend, forever. Bounded, it fails after 5 s and is tried again.
  it('is given up after its bound and tried again, and the pass goes on', async () => {
    jest.useFakeTimers({ doNotFake: ['performance', 'nextTick', 'queueMicrotask'] });
    try {
      let calls = 0;
      const lost = new LostReplies(() => {
        calls++;
        return calls === 1 ? new Promise<number>(() => undefined) : Promise.resolve(1);
      });
      sendOne(lost, 'a', monotonicNow() - 5_000);
      lost.failed('a', new Error('Connection is closed.'));
      await jest.advanceTimersByTimeAsync(0);
      expect(calls).toBe(1);
      for (let i = 0; i < 40 && lost.counts.refunded === 0; i++) {
        await jest.advanceTimersByTimeAsync(500);
      }
      expect(calls).toBe(2);
      expect(lost.counts).toMatchObject({ pending: 0, refunded: 1 });
    } finally {
      jest.useRealTimers();
    }
  });
});
