import { ALGORITHM_DEFINITIONS } from '../core/algorithms/algorithm.registry';
import { costArg, rulesArg } from './script-reply.util';
import { pushStorageKeysWithLedgers } from './storage-key.util';
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
 * Whether a decision's script reads its spend id: a spend settled by its receipt (registered in
 * its keys' ledgers), an algorithm that keeps one entry per spend (sliding-log, concurrency), and,
 * with `runField` (a lone decision with outcome markers on), every spend: its run's field in the
 * outcome hash is named after it (see lua/lib/outcome.lua). A batch's spends need none for their
 * markers (they are named by their place in the run). Another decision sends none ('' alone; a
 * batch leaves it out).
 */
export function sendsSpendId(request: SpendRequest, spend: boolean, runField = false): boolean {
  return (
    (spend && (runField || request.settles === true)) ||
    ALGORITHM_DEFINITIONS[request.algorithm].keepsSpendIds
  );
}

/**
 * KEYS and ARGV of one batch/consume run (see lua/batch/consume.lua): the clock fields, each rule
 * set once (decisions of one policy share its limits array), then two values per decision (three
 * for a spend settled by its receipt, or an algorithm that keeps spend ids: its spend id); and,
 * when it has a spend with an id and markers are on (`hash`), the outcome hash (`hash`, the last key) with the run's field
 * (`field`: its first spend's id and `*`) and the fields to delete (`done()`, read only then).
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
  hash: string | undefined,
  done: () => string,
): { keys: string[]; args: Array<string | number>; field: string | undefined } {
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
  // The run's field in the outcome hash, named after its first spend (see lua/lib/outcome.lua).
  let field: string | undefined;
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
    // Its own name ('*' after the first spend's id): the first spend, decided again alone (late
    // on the script's clock, in time for its caller), has a field of its own named by its id.
    if (spend && spendId && field === undefined && hash !== undefined) field = `${spendId}*`;
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
  args[5] = field === undefined ? stride : -stride; // negative: the hash is the last key
  args[6] = setCount;
  for (const value of decisions) args.push(value);
  if (field !== undefined) {
    keys.push(hash!);
    args.push(field, done());
  }
  return { keys, args, field };
}
