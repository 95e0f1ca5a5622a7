import { stateLifetimeMs } from './state-lifetime.util';
import type { SpendRequest, SpendResult } from './store.interface';

/* What the store sends to its scripts and reads back from them. */

/** Where the next decision's values of a reply start, after {@link toResult} read one. */
export interface ReplyCursor {
  next: number;
}

/** Flags of a decision's status value (see writeDecision in lua/lib/decide.lua). */
const ALLOWED = 1;
const HAS_MARKS = 2;
const HAS_AT = 4;
const FLAGS = 8;

/**
 * `count` reset marks from `reply[from]` on, or undefined when all are 0 (no key was ever reset).
 */
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

/**
 * One decision of a consume-frame or batch/consume reply, from `reply[at]` on, as writeDecision in
 * lua/lib/decide.lua writes it: status (allowed, whether reset marks and the instant decided at
 * follow, binding limit and refusing key), remaining, retryAfterMs only when refused,
 * resetAfterMs, the instant decided at only when it is not `clockReading` (the reply's clock
 * reading), the caller keys' reset marks only when some key has one, and for a policy with a
 * lockout the end of the latest lockout holding it back. Sets `cursor.next` to where the next
 * decision's values start.
 */
export function toResult(
  reply: readonly number[],
  at: number,
  clockReading: number,
  request: SpendRequest,
  spendId: string | undefined,
  cursor?: ReplyCursor,
): SpendResult {
  const status = reply[at]!;
  const flags = status % FLAGS;
  const allowed = (flags & ALLOWED) !== 0;
  const packed = (status - flags) / FLAGS;
  const stride = request.limits.length + 1;
  const binding = packed % stride;
  const refusing = (packed - binding) / stride;
  let i = at + 1;
  const remaining = reply[i++]!;
  const retryAfterMs = allowed ? 0 : reply[i++]!;
  const resetAfterMs = reply[i++]!;
  const decidedAt = (flags & HAS_AT) !== 0 ? reply[i++]! : clockReading;
  const result: {
    -readonly [K in keyof SpendResult]: SpendResult[K];
  } = {
    allowed,
    remaining,
    limitIndex: binding - 1,
    retryAfterMs,
    resetAfterMs,
    blockedKeyIndex: refusing - 1,
    at: decidedAt,
  };
  if (spendId !== undefined && allowed) result.spendId = spendId;
  if ((flags & HAS_MARKS) !== 0) {
    const count = request.keys.length;
    const marks = resetMarks(reply, i, count);
    if (marks) result.resetMarks = marks;
    i += count;
  }
  if (request.block !== undefined) {
    const until = reply[i++]!;
    if (until > 0) result.blockedUntil = until;
  }
  if (cursor) cursor.next = i;
  return result;
}

/**
 * A request's limits as script arguments for a refund: L, then limit, window ms and burst per
 * limit (see lua/lib/refund-frame.lua).
 */
export function limitArgs(request: Pick<SpendRequest, 'limits'>): Array<number | string> {
  const args: Array<number | string> = [request.limits.length];
  for (const { limit, windowMs, burst } of request.limits) args.push(limit, windowMs, burst);
  return args;
}

/** What {@link rulesArg} built a text from, kept to check that a later request sends the same. */
interface RulesText {
  readonly algorithm: string;
  readonly block: SpendRequest['block'];
  /** limit, window ms and burst per limit, then the lockout's numbers, as they were. */
  readonly values: readonly unknown[];
  readonly text: string;
}

/** The last text of {@link rulesArg} per limits array (a policy's requests share theirs). */
const rulesTexts = new WeakMap<readonly unknown[], RulesText>();

/** The numbers a rules text is made of, in a fixed order. */
function rulesValues(request: SpendRequest): unknown[] {
  const values: unknown[] = [];
  for (const { limit, windowMs, burst } of request.limits) values.push(limit, windowMs, burst);
  const { block } = request;
  if (block !== undefined) {
    values.push(block.durationMs, block.factor, block.maxMs, block.forgetAfterMs, block.restart);
  }
  return values;
}

/** Whether `known` was built from what `request` holds now (its arrays and objects may change). */
function sameRules(known: RulesText, request: SpendRequest): boolean {
  if (known.algorithm !== request.algorithm || known.block !== request.block) return false;
  const { values } = known;
  const { limits, block } = request;
  if (values.length !== limits.length * 3 + (block === undefined ? 0 : 5)) return false;
  let i = 0;
  for (const { limit, windowMs, burst } of limits) {
    if (values[i++] !== limit || values[i++] !== windowMs || values[i++] !== burst) return false;
  }
  return (
    block === undefined ||
    (values[i] === block.durationMs &&
      values[i + 1] === block.factor &&
      values[i + 2] === block.maxMs &&
      values[i + 3] === block.forgetAfterMs &&
      values[i + 4] === block.restart)
  );
}

/**
 * A decision's limits as one script argument (see readRules in lua/lib/decide.lua):
 * 'L;limit,window,burst;…'. For a policy with a lockout, L is sent as
 * 'L:duration:factor:max:forget' (then ':lifetime', the policy's longest state in ms, when a
 * lockout restarts the count: the ledger's reset mark must outlive every receipt it voids), so
 * other policies pay nothing for it. The script keeps what it read from a text for later calls.
 * The text is built once per policy here: kept per limits array, and used again only while the
 * request still holds the numbers it was built from (a caller of the public `Store` API may change
 * its arrays between calls).
 */
export function rulesArg(request: SpendRequest): string {
  const known = rulesTexts.get(request.limits);
  if (known !== undefined && sameRules(known, request)) return known.text;
  const { limits, block, algorithm } = request;
  let text =
    block !== undefined
      ? `${limits.length}:${block.durationMs}:${block.factor}:${block.maxMs}:${block.forgetAfterMs}${block.restart ? `:${stateLifetimeMs(algorithm, limits)}` : ''}`
      : String(limits.length);
  for (const { limit, windowMs, burst } of limits) text += `;${limit},${windowMs},${burst}`;
  rulesTexts.set(limits, { algorithm, block, values: rulesValues(request), text });
  return text;
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
