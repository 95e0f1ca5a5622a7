import { stateLifetimeMs } from './state-lifetime.util';
import type { SpendRequest, SpendResult } from './store.interface';

/* What the store sends to its scripts and reads back from them. */

/**
 * Values per decision in a consume-frame reply (after the clock's reading) and in a batch/consume
 * reply (after the batch's), before its reset marks: status (allowed + 2 × (binding limit + (L + 1)
 * × refusing key), both 1-based, L the number of limits; -1: past its deadline; -2: an error,
 * message next), remaining, retryAfterMs, resetAfterMs, the instant decided at.
 */
export const REPLY_LENGTH = 5;

/** `count` reset marks from `reply[from]` on, or undefined when all are 0 (no key was ever reset). */
export function resetMarks(
  reply: readonly number[],
  from: number,
  count: number,
): number[] | undefined {
  for (let i = from; i < from + count; i++) {
    if (reply[i]! > 0) return reply.slice(from, from + count);
  }
  return undefined;
}

/** One decision's values of a consume-frame or batch/consume reply, from `reply[at]` on. */
export function toResult(
  reply: readonly number[],
  at: number,
  request: SpendRequest,
  spendId: string | undefined,
): SpendResult {
  const status = reply[at]!;
  const allowed = status % 2 === 1;
  const packed = (status - (status % 2)) / 2;
  const stride = request.limits.length + 1;
  const binding = packed % stride;
  const refusing = (packed - binding) / stride;
  const marks = resetMarks(reply, at + REPLY_LENGTH, request.keys.length);
  const result: {
    -readonly [K in keyof SpendResult]: SpendResult[K];
  } = {
    allowed,
    remaining: reply[at + 1]!,
    limitIndex: binding - 1,
    retryAfterMs: reply[at + 2]!,
    resetAfterMs: reply[at + 3]!,
    blockedKeyIndex: refusing - 1,
    at: reply[at + 4]!,
  };
  if (spendId !== undefined && allowed) result.spendId = spendId;
  if (marks) result.resetMarks = marks;
  if (request.block !== undefined) {
    const until = reply[at + REPLY_LENGTH + request.keys.length]!;
    if (until > 0) result.blockedUntil = until;
  }
  return result;
}

/** Reply values of one decision: {@link REPLY_LENGTH}, a reset mark per key, and a lockout's end. */
export function replyLength(request: SpendRequest): number {
  return REPLY_LENGTH + request.keys.length + (request.block === undefined ? 0 : 1);
}

/**
 * A request's limits as script arguments: L, then limit, window ms and burst per limit. For a
 * decision (`withBlock`) of a policy with a lockout, L is sent as 'L:duration:factor:max:forget'
 * (then ':lifetime', the policy's longest state in ms, when a lockout restarts the count: the
 * ledger's reset mark must outlive every receipt it voids; see readRules in lua/lib/decide.lua), so other
 * policies pay nothing for it.
 */
export function limitArgs(request: SpendRequest, withBlock = false): Array<number | string> {
  const { block } = request;
  const args: Array<number | string> = [
    withBlock && block !== undefined
      ? `${request.limits.length}:${block.durationMs}:${block.factor}:${block.maxMs}:${block.forgetAfterMs}${block.restart ? `:${stateLifetimeMs(request.algorithm, request.limits)}` : ''}`
      : request.limits.length,
  ];
  for (const { limit, windowMs, burst } of request.limits) args.push(limit, windowMs, burst);
  return args;
}

/**
 * A spend's cost for ARGV: the cost, or 'cost:lifetime' for a spend that will be settled by its
 * receipt ({@link SpendRequest.settles}): the script then registers it in its keys' ledgers (see
 * readCost in lua/lib/decide.lua and lua/lib/ledger.lua), with the policy's lifetime. Only on a
 * spend: a peek writes nothing.
 */
export function costArg(request: SpendRequest, spend: boolean): number | string {
  return spend && request.settles === true
    ? `${request.cost}:${stateLifetimeMs(request.algorithm, request.limits)}`
    : request.cost;
}

const DAY_MS = 86_400_000;

/**
 * Maps window ends on a custom clock to real expiry instants: whole days, so stores built at
 * slightly different moments on the same clock set alike expiries, and one day ahead, so a short
 * window never expires before it is read. Nothing is recognised by it (it differs between
 * processes).
 */
export function expiryOffset(clockNow: number): number {
  return Math.ceil((Date.now() - Math.floor(clockNow)) / DAY_MS) * DAY_MS + DAY_MS;
}
