import { Limiter } from '../../lib';
import { backends, TestClock } from '../support/backends';

// A decision on two caller keys (two slots on Cluster: two slot groups) after the clock stepped
// back behind one key's state: the receipt's instant (`at`, read by refunds and adjustments)
// must be the later instant that state showed, as MemoryStore and a single Redis answer.
// Fails on Cluster, also before 0515596: merge() in lib/stores/slot-groups.util.ts answers
// `at: parts[0].result.at` (per-key instants are in atByKey, which refunds read), not the latest.

const stores = backends('review-cluster-at');

it.each([
  ['k1 in an earlier window, k9 in the later', 1_050, 2_000],
  ['k9 only', undefined, 2_000],
  ['k1 in the later window, k9 earlier', 2_000, 1_050],
])('fixed-window, %s: every store gives the same receipt instant', async (_t, k1At, k9At) => {
  const seen: Array<{ name: string; out: unknown[] }> = [];
  for (const backend of stores) {
    const clock = new TestClock();
    const limiter = new Limiter(backend.store(clock), {
      name: 'at',
      algorithm: 'fixed-window',
      limit: 2,
      window: 1_000,
    });
    for (const [key, at] of [
      ['k1', k1At],
      ['k9', k9At],
    ] as const) {
      if (at === undefined) continue;
      clock.now = TestClock.BASE + at;
      await limiter.consume(key);
    }
    clock.now = TestClock.BASE + 1_385; // behind the later state
    const d = await limiter.consume(['k1', 'k9']);
    seen.push({
      name: backend.name,
      out: [d.allowed, d.remaining, d.resetAfterMs, d.receipt.at - TestClock.BASE],
    });
  }
  for (const other of seen.slice(1)) expect(other).toEqual({ ...seen[0], name: other.name });
});
