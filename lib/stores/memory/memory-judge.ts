import { blockKey, storageKey } from '../storage-key.util';
import type { SpendRequest } from '../store.interface';
import type { PairEvaluation } from './memory-algorithm';
import type { MemoryTable } from './memory-table';
import { MEMORY_MODELS } from './memory-models';

// Judging one request of a `MemoryStore` against the state before the call, as
// `lua/lib/decide.lua` does: every limit on every key, then the keys' lockouts. Nothing is
// written here; the store charges (or refuses) from the judgement.

/** A caller key's lockout, as `lua/lib/decide.lua` keeps it in Redis ('until:duration:forgetAt'). */
export interface Lockout {
  readonly kind: 'lockout';
  /** When it ends. */
  readonly until: number;
  /** How long it lasts (the next one escalates from it). */
  readonly duration: number;
  /** From this instant on it is forgotten: the next lockout starts from the policy's duration. */
  readonly forgetAt: number;
}

/** What the lockouts of a request's keys add to its evaluation (see judgeBlocks in lua/lib/decide.lua). */
export interface LockoutJudgement {
  /** The caller keys' lockouts that hold the call back (or that it starts), by end. */
  readonly ends: readonly number[];
  /** Lockouts a refused spend starts: stored name, end and length. */
  readonly starts: ReadonlyArray<{ name: string; key: string; until: number; duration: number }>;
  /** The latest end among `ends`, or 0. */
  readonly blockedUntil: number;
}

/**
 * What a request would get: {@link evaluate}, then for a policy with a lockout each key's lockout, as judgeBlocks in
 * `lua/lib/decide.lua` does: a key locked out refuses until its end (remaining 0); a key out of
 * budget refuses until the lockout a refused spend starts for it ends.
 */
export function judgeRequest(
  table: MemoryTable,
  request: SpendRequest,
  now: number,
  spendId: string | undefined,
) {
  const part = evaluate(table, request, now, spendId);
  const { block } = request;
  if (block === undefined) return part;
  const limitCount = request.limits.length;
  let held = false;
  let longest = 0;
  let refusingKey = -1;
  let refusingLimit = 0;
  let blockedUntil = 0;
  const ends: number[] = [];
  const starts: Array<{ name: string; key: string; until: number; duration: number }> = [];
  request.keys.forEach((key, k) => {
    // The key's own binding limit: its longest budget wait, else its least room (ties: first).
    let budgetFits = true;
    let budgetWait = 0;
    let waitLimit = 0;
    let room = Infinity;
    let roomLimit = 0;
    for (let l = 0; l < limitCount; l++) {
      const { evaluation } = part.pairs[k * limitCount + l]!;
      if (!evaluation.fits) {
        if (budgetFits || evaluation.waitMs > budgetWait) {
          budgetWait = evaluation.waitMs;
          waitLimit = l;
        }
        budgetFits = false;
      }
      if (evaluation.room < room) {
        room = evaluation.room;
        roomLimit = l;
      }
    }
    const name = blockKey('', key, request.policy);
    const stored = table.live(name, now) as Lockout | undefined;
    const remembered = stored?.kind === 'lockout' && stored.forgetAt > now ? stored : undefined;
    let keyWait = -1;
    let end = 0;
    if (remembered !== undefined && remembered.until > now) {
      held = true;
      end = remembered.until;
      keyWait = Math.max(end - now, budgetFits ? 0 : budgetWait);
    } else if (!budgetFits && block.durationMs === 0) {
      keyWait = budgetWait; // a policy that starts no lockout (it honours those of its name)
    } else if (!budgetFits) {
      const duration =
        remembered === undefined
          ? block.durationMs
          : Math.max(
              block.durationMs,
              Math.min(Math.floor(remembered.duration * block.factor), block.maxMs),
            );
      end = now + duration;
      // (`restart`: the lockout forgets the key's count, so only the lockout is waited out)
      keyWait = block.restart ? duration : Math.max(budgetWait, duration);
      starts.push({ name, key, until: end, duration });
    }
    if (end > 0) ends.push(end);
    blockedUntil = Math.max(blockedUntil, end);
    if (keyWait >= 0 && (refusingKey < 0 || keyWait > longest)) {
      longest = keyWait;
      refusingKey = k;
      refusingLimit = budgetFits ? roomLimit : waitLimit;
    }
  });
  part.lockouts = { ends, starts, blockedUntil };
  if (refusingKey < 0) return part;
  part.fits = false;
  part.retryAfterMs = longest;
  part.blockedKeyIndex = refusingKey;
  // The refusing key binds with its own limit (see judgeBlocks in lua/lib/decide.lua).
  part.budgetFits = false;
  part.blockedLimitIndex = refusingLimit;
  if (held) part.remaining = 0;
  return part;
}

/** Every limit of one request on each of its keys, against the state before this call. */
function evaluate(
  table: MemoryTable,
  request: SpendRequest,
  now: number,
  spendId: string | undefined,
) {
  const algorithm = MEMORY_MODELS[request.algorithm];
  const context = { cost: request.cost, now, spendId };
  const pairs: Array<{ name: string; evaluation: PairEvaluation<unknown> }> = [];
  let fits = true;
  let remaining = Infinity;
  let limitIndex = 0;
  let retryAfterMs = 0;
  let blockedKeyIndex = -1;
  let blockedLimitIndex = 0;
  let seen = -1;
  request.keys.forEach((key, k) =>
    request.limits.forEach((rule, l) => {
      const name = storageKey('', key, request.policy, l);
      const evaluation = algorithm.evaluate(table.read(name, algorithm, now), rule, context);
      pairs.push({ name, evaluation });
      if (evaluation.seen !== undefined) seen = Math.max(seen, evaluation.seen);
      if (!evaluation.fits) {
        fits = false;
        if (evaluation.waitMs > retryAfterMs || blockedKeyIndex < 0) {
          retryAfterMs = evaluation.waitMs;
          blockedKeyIndex = k;
          blockedLimitIndex = l;
        }
      }
      if (evaluation.room < remaining || (evaluation.room === remaining && l < limitIndex)) {
        remaining = evaluation.room;
        limitIndex = l;
      }
    }),
  );
  return {
    pairs,
    fits,
    /** Whether the budget alone fits (a lockout can still refuse: see {@link judge}). */
    budgetFits: fits,
    remaining,
    limitIndex,
    retryAfterMs,
    blockedKeyIndex,
    blockedLimitIndex,
    seen,
    lockouts: undefined as LockoutJudgement | undefined,
  };
}
