import { ALGORITHM_DEFINITIONS } from '../core/algorithms/algorithm.registry';
import { costArg, rulesArg } from './script-reply.util';
import { outcomeKey, pushStorageKeysWithLedgers } from './storage-key.util';
import type { SpendRequest, SpendResult } from './store.interface';

/** A decision waiting for the next coalesced batch. */
export interface QueuedDecision {
  readonly request: SpendRequest;
  readonly spend: boolean;
  readonly spendId: string | undefined;
  /** The deadline on the script's clock, or undefined for none. */
  readonly deadline: number | undefined;
  /** The custom clock's reading when the decision was made, or '' (the batch reads Redis TIME). */
  readonly now: string;
  /** Its Cluster slot (-1 off Cluster): a batch holds the decisions of one slot. */
  readonly slot: number;
  readonly resolve: (result: SpendResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Whether a decision's script reads its spend id: every spend (an allowed one leaves an outcome
 * marker named after it, see lua/lib/outcome.lua), and an algorithm that keeps one entry per spend
 * (sliding-log, concurrency). A peek of another algorithm sends none (a batch leaves it out; a
 * lone decision sends '').
 */
export function sendsSpendId(request: SpendRequest, spend: boolean): boolean {
  return spend || ALGORITHM_DEFINITIONS[request.algorithm].keepsSpendIds;
}

/**
 * KEYS and ARGV of one batch/consume run (see lua/batch/consume.lua): the clock fields, each rule
 * set once (decisions of one policy share its limits array), then two values per decision (three
 * for a spend, or an algorithm that keeps spend ids: its spend id); and the run's outcome hash
 * (`marker`, the last key), when it has a spend with an id.
 *
 * @param now the batch's clock reading for ARGV, or '' to have the script read Redis TIME
 * @param customClock whether a custom clock is used (each decision then carries its own reading)
 */
export function batchCall(
  batch: readonly QueuedDecision[],
  prefix: string,
  now: string,
  expiryOffsetMs: number,
  customClock: boolean,
): { keys: string[]; args: Array<string | number>; marker: string | undefined } {
  const keys: string[] = [];
  const args: Array<string | number> = [now, expiryOffsetMs, '', '', '', 0, 0];
  let earliestDeadline = Infinity;
  let stride = 2; // more than any decision's key count
  for (const { request } of batch) stride = Math.max(stride, request.keys.length + 1);
  const sets = new Map<readonly unknown[], { set: number; algorithm: string }>();
  let setCount = 0;
  const decisions: Array<string | number> = [batch.length];
  let deadlines = '';
  let nows = '';
  // The run's outcome hash, named after its first spend (see lua/lib/outcome.lua).
  let marker: string | undefined;
  for (let d = 0; d < batch.length; d++) {
    const { request, spend, spendId, deadline, now: decidedAt } = batch[d]!;
    pushStorageKeysWithLedgers(
      keys,
      prefix,
      request.keys,
      request.policy,
      request.limits.length,
      request.block !== undefined,
    );
    // Its own name ('#run' after the first spend's marker's): the first spend, decided again
    // alone (late on the script's clock, in time for its caller), leaves its string marker there.
    if (spend && spendId && marker === undefined)
      marker = `${outcomeKey(prefix, request.keys[0]!, spendId)}#run`;
    let known = sets.get(request.limits);
    if (known === undefined || known.algorithm !== request.algorithm) {
      known = { set: ++setCount, algorithm: request.algorithm };
      sets.set(request.limits, known);
      args.push(request.algorithm, rulesArg(request));
    }
    if (d > 0) deadlines += ',';
    if (deadline !== undefined) {
      if (deadline < earliestDeadline) earliestDeadline = deadline;
      deadlines += deadline;
    }
    if (customClock) nows += d > 0 ? `,${decidedAt}` : decidedAt;
    decisions.push(
      ((known.set - 1) * stride + request.keys.length) * 2 + (spend ? 1 : 0),
      costArg(request, spend),
    );
    if (sendsSpendId(request, spend)) decisions.push(spendId ?? '');
  }
  if (earliestDeadline !== Infinity) {
    args[2] = earliestDeadline;
    args[3] = deadlines;
  }
  if (customClock) args[4] = nows;
  args[5] = marker === undefined ? stride : -stride; // negative: the hash is the last key
  args[6] = setCount;
  for (const value of decisions) args.push(value);
  if (marker !== undefined) keys.push(marker);
  return { keys, args, marker };
}
