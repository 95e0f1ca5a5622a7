import { Attempt } from './attempt';
import { isCallerError } from './caller-error.util';
import { monotonicNow } from './clock.util';
import type { Decision, StackedDecision } from './decision';
import { refusedError } from './errors';
import { Deadlines } from './deadlines';
import { decisionEvent, type DecisionEvents } from './events';
import { checkActualCost, type Keys } from './keys.util';
import { checkOptions } from './options.util';
import { sequentialStack } from './sequential-stack';
import type { SpendRequest, SpendResult, StackResult, Store } from './store';
import { checkWaitOptions, type Sleep, timerSleep, type WaitOptions, waitTurn } from './wait';
import { asError, isList } from './values.util';
import type { LimitRule, ResolvedPolicy } from './policy';

// Stacked decisions (`Limiter.consumeAll` and friends): several policies decided as one. The
// public API is the static methods of `Limiter`, which delegate here; this module knows a limiter
// only by the members a stack uses ({@link StackMember}), so it does not import `limiter.ts`.

/**
 * What a stack uses of each part's limiter: its store, deadlines and reporting, and how it builds
 * requests and decisions. `Limiter` is one (these members are internal to the package).
 */
export interface StackMember {
  readonly store: Store;
  readonly timeoutMs: number;
  readonly deadlines: Deadlines;
  readonly policy: ResolvedPolicy;
  readonly options: { readonly events?: DecisionEvents; readonly sleep?: Sleep };
  /** How the part's policy builds requests and decisions, fails and shadows. */
  readonly decider: StackDecider;
  refund(target: Decision): Promise<boolean>;
  adjust(target: Decision, actualCost: number): Promise<boolean>;
  release(target: Decision): Promise<boolean>;
  extend(target: Decision): Promise<boolean>;
}

/** What a stack uses of a part's `PolicyDecider`. */
export interface StackDecider {
  request(keys: Keys, options: { readonly cost?: number }): SpendRequest;
  toDecision(request: SpendRequest, result: SpendResult, spend: boolean): Decision;
  shadowRefuses(decision: Decision): boolean;
  shadowed(decision: Decision, allowed?: boolean): Decision;
  failed(request: SpendRequest, spend: boolean, error: unknown): Promise<Decision>;
  refundLate(request: SpendRequest, late: SpendResult): void;
  versionOf(limits: readonly LimitRule[]): number | undefined;
}

/** Whether a part's `limiter` is one (`instanceof Limiter`, given by the caller). */
export type IsStackMember = (value: unknown) => value is StackMember;

/** One part of a stack as the caller gave it (`StackPart`, its limiter not yet checked). */
export interface StackPartOf {
  readonly limiter: unknown;
  readonly keys: Keys;
  readonly cost?: number;
}

/** Every field of a stack part. */
const STACK_PART_FIELDS: readonly (keyof StackPartOf)[] = ['limiter', 'keys', 'cost'];

/** Which limiter made each part of a stacked decision, for `Limiter.refundAll`. */
const stackOwners = new WeakMap<Decision, StackMember>();

/** `Limiter.waitForAll`: `consumeAll`, waiting for a turn. */
export async function waitForAll(
  parts: readonly StackPartOf[],
  options: WaitOptions,
  isMember: IsStackMember,
): Promise<StackedDecision> {
  const wait = checkWaitOptions(options, 'waitForAll');
  const first: unknown = isList(parts) ? parts[0]?.limiter : undefined;
  const sleep = (isMember(first) && first.options.sleep) || timerSleep;
  const refusal = (stacked: StackedDecision): Decision =>
    stacked.refusedBy ?? stacked.decisions.find((d) => !d.allowed)!;
  return waitTurn(
    () => decideAll(parts, true, 'consumeAll', isMember),
    (stacked) => refusal(stacked).failure?.failMode === 'closed',
    (stacked) => refusedError(refusal(stacked)),
    wait,
    sleep,
    (stacked) => refusal(stacked).receipt.algorithm === 'concurrency',
  );
}

/** `Limiter.refundAll`: every part given back by its owner. */
export function refundAll(stacked: StackedDecision): Promise<boolean> {
  return settleParts(stacked, 'refundAll', (owner, decision) => owner.refund(decision));
}

/** `Limiter.releaseAll`: the `concurrency` leases released, the rate parts left charged. */
export function releaseAll(stacked: StackedDecision): Promise<boolean> {
  return settleParts(stacked, 'releaseAll', (owner, decision) =>
    decision.receipt.algorithm === 'concurrency' ? owner.release(decision) : Promise.resolve(false),
  );
}

/** `Limiter.adjustAll`: every part settled to its actual cost. */
export function adjustAll(
  stacked: StackedDecision,
  actualCosts: readonly number[],
): Promise<boolean> {
  const count = isList(stacked?.decisions) ? stacked.decisions.length : -1;
  if (!isList(actualCosts) || (count >= 0 && actualCosts.length !== count)) {
    throw new TypeError(`adjustAll() takes one actual cost per part of the stack (${count} parts)`);
  }
  stacked.decisions.forEach((decision, i) => {
    checkActualCost(actualCosts[i], decision.receipt.limits, `adjustAll(): actualCosts[${i}]`);
    if (decision.receipt.algorithm === 'concurrency') {
      throw new TypeError(
        `adjustAll(): part ${i} (policy '${decision.policy}') leases (concurrency): release it with releaseAll, it has no cost to settle`,
      );
    }
  });
  return settleParts(stacked, 'adjustAll', (owner, decision, i) =>
    owner.adjust(decision, actualCosts[i]!),
  );
}

/** `Limiter.beginAll`: a stacked spend handed over as one {@link Attempt}. */
export async function beginAll(
  parts: readonly StackPartOf[],
  isMember: IsStackMember,
): Promise<Attempt> {
  const stacked = await decideAll(parts, true, 'beginAll', isMember, true);
  if (!stacked.allowed) throw refusedError(stacked.refusedBy ?? stacked.decisions[0]!);
  return new Attempt(
    stacked.decisions[0]!,
    () => refundAll(stacked),
    (_first, actualCost) => settleStackTo(stacked, actualCost),
    () => extendStack(stacked),
    { stacked, release: () => releaseAll(stacked) },
  );
}

/** Runs `settle` on every part of a stack by its owner; throws the first failure after all ran. */
export async function settleParts(
  stacked: StackedDecision,
  operation: string,
  settle: (owner: StackMember, decision: Decision, index: number) => Promise<boolean>,
): Promise<boolean> {
  if (!stacked || typeof stacked !== 'object' || !isList(stacked.decisions)) {
    throw new TypeError(`${operation}() takes the StackedDecision consumeAll() returned`);
  }
  const owners = stacked.decisions.map((decision) => {
    const owner = stackOwners.get(decision);
    if (!owner)
      throw new TypeError(`${operation}() takes the StackedDecision consumeAll() returned`);
    return owner;
  });
  const settled = await Promise.allSettled(
    stacked.decisions.map((decision, i) => settle(owners[i]!, decision, i)),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw asError(failed.reason);
  return settled.some((s) => s.status === 'fulfilled' && s.value);
}

export async function decideAll(
  parts: readonly StackPartOf[],
  spend: boolean,
  caller: string,
  isMember: IsStackMember,
  settles = false,
): Promise<StackedDecision> {
  if (!isList(parts) || parts.length === 0) {
    throw new TypeError(`${caller}() needs a non-empty array of { limiter, keys, cost? }`);
  }
  const first = parts[0]?.limiter as StackMember | undefined;
  const seen = new Set<string>();
  let shortest = first!;
  const requests = parts.map((part, i) => {
    if (!part || !isMember(part.limiter)) {
      throw new TypeError(`${caller}(): part ${i} needs a Limiter as 'limiter'`);
    }
    checkOptions(part, STACK_PART_FIELDS, `${caller}() parts[${i}]`);
    if (part.limiter.store !== first!.store) {
      throw new TypeError(
        `${caller}(): part ${i} ('${part.limiter.policy.name}') uses another store than part 0; ` +
          'a stack is one decision on one store',
      );
    }
    const asked = part.limiter.decider.request(part.keys, { cost: part.cost });
    const most = Math.min(...asked.limits.map((rule) => rule.burst));
    if (asked.cost > most) {
      // Only a live override's lower limit gets here (the policy's own was checked).
      throw new RangeError(
        `${caller}(): part ${i} ('${asked.policy}') costs ${asked.cost}, above the limit of ${most} a live override sets for its keys`,
      );
    }
    // A spend to be settled by its receipts (beginAll) is registered in its keys' ledgers, as
    // begin() does; a lease needs none.
    const request =
      settles && asked.algorithm !== 'concurrency' ? { ...asked, settles: true } : asked;
    for (const key of request.keys) {
      const pair = `${request.policy}\u0000${key}`;
      if (seen.has(pair)) {
        throw new RangeError(
          `${caller}(): policy '${request.policy}' is given key ${JSON.stringify(key)} in two parts; ` +
            'merge them into one part',
        );
      }
      seen.add(pair);
    }
    if (part.limiter.timeoutMs < shortest.timeoutMs) shortest = part.limiter;
    return request;
  });
  const store = first!.store;
  const startedAt = monotonicNow();
  const deadlineAt = startedAt + shortest.timeoutMs;
  const stack = requests.map((request) => ({ ...request, deadlineAt }));
  const limiters = parts.map((part) => part.limiter as StackMember);
  // The first call waits as the limiter with the shortest timeoutMs waits for its own calls; a
  // second one (parts in shadow mode set aside) waits what is left of that time.
  let calls = 0;
  const decideStack = (indices: readonly number[]): Promise<StackResult> => {
    const deadlines =
      calls++ === 0 ? shortest.deadlines : new Deadlines(Math.max(1, deadlineAt - monotonicNow()));
    const some = indices.map((i) => stack[i]!);
    const pending: Promise<StackResult> =
      typeof store.consumeStack !== 'function' || typeof store.peekStack !== 'function'
        ? sequentialStack(store, some, spend) // a store written before stacks
        : spend
          ? store.consumeStack(some)
          : store.peekStack(some);
    return deadlines.race(pending, (late) => {
      // The caller was already answered without these spends: give them back.
      if (spend && late.allowed) {
        late.results.forEach((r, n) => limiters[indices[n]!]!.decider.refundLate(some[n]!, r));
      }
    });
  };
  let decisions: Decision[];
  try {
    const result = await decideStack(stack.map((_, i) => i));
    decisions = result.results.map((r, i) => limiters[i]!.decider.toDecision(stack[i]!, r, spend));
    const shadows = decisions.map((d, i) => limiters[i]!.decider.shadowRefuses(d));
    if (
      shadows.some(Boolean) &&
      decisions.every((d, i) => shadows[i] || d.blockedBy === undefined)
    ) {
      // Only parts in shadow mode refused: the others are decided (and spent) without them,
      // in a second store call; the shadow parts share that call's outcome.
      const enforced = stack.map((_, i) => i).filter((i) => !shadows[i]);
      const again = enforced.length > 0 ? await decideStack(enforced) : undefined;
      const allowedAgain = again?.allowed ?? true;
      decisions = decisions.map((d, i) => {
        if (shadows[i]) return limiters[i]!.decider.shadowed(d, allowedAgain);
        const r = again!.results[enforced.indexOf(i)]!;
        return limiters[i]!.decider.toDecision(stack[i]!, r, spend);
      });
    } else if (shadows.some(Boolean)) {
      // An enforced part refused: the shadow parts that refused too are refused with the stack.
      decisions = decisions.map((d, i) =>
        shadows[i] ? limiters[i]!.decider.shadowed(d, false) : d,
      );
    }
  } catch (error) {
    if (isCallerError(error)) throw error; // a broken clock is no store failure: no fail mode
    decisions = await Promise.all(
      limiters.map(async (l, i) => {
        const failed = await l.decider.failed(stack[i]!, spend, error);
        return l.decider.shadowRefuses(failed) ? l.decider.shadowed(failed) : failed;
      }),
    );
    if (!decisions.every((d) => d.allowed)) {
      // Parts that the fallback charged are given back: a stack spends on all parts or none.
      // Parts that allowed (open, or the fallback) are refused with the stack.
      decisions = await Promise.all(
        decisions.map(async (d, i) => {
          if (!d.allowed) return d;
          if (d.receipt.spent) await limiters[i]!.refund(d).catch(() => undefined);
          return Object.freeze({
            ...d,
            allowed: false,
            receipt: Object.freeze({ ...d.receipt, cost: 0, spent: false }),
          });
        }),
      );
    }
  }
  decisions.forEach((d, i) => stackOwners.set(d, limiters[i]!));
  const allowed = decisions.every((d) => d.allowed);
  let refusedBy: Decision | undefined;
  for (const d of decisions) {
    // A refusal on budget (this part's own), or the store failing under fail mode closed; never
    // a part in shadow mode.
    const refusing =
      !d.shadowRefused && (d.blockedBy !== undefined || d.failure?.failMode === 'closed');
    if (d.allowed || !refusing) continue;
    if (!refusedBy || d.retryAfterMs > refusedBy.retryAfterMs) refusedBy = d;
  }
  const latencyMs = monotonicNow() - startedAt;
  decisions.forEach((d, i) => {
    const events = limiters[i]!.options.events;
    if (spend) events?.watcher?.(d);
    if (!events?.active) return;
    // A part that fitted, left unspent because another part refused.
    const elsewhere =
      !allowed && d !== refusedBy && (!d.blockedBy || d.shadowRefused === true) && !d.failure;
    const version = limiters[i]!.decider.versionOf(d.receipt.limits);
    events.emit(decisionEvent(spend ? 'consume' : 'peek', d, latencyMs, true, elsewhere, version));
  });
  return Object.freeze({
    allowed,
    decisions: Object.freeze(decisions),
    ...(refusedBy && { refusedBy }),
    retryAfterMs: allowed ? 0 : (refusedBy?.retryAfterMs ?? 0),
  });
}

/**
 * Settles a stacked spend to `actualCost` on every rate part (as `Limiter.adjustAll`) and
 * releases its `concurrency` parts (a lease has no cost to settle).
 */
export function settleStackTo(stacked: StackedDecision, actualCost: number): Promise<boolean> {
  return settleParts(stacked, 'adjustAll', (owner, decision) =>
    decision.receipt.algorithm === 'concurrency'
      ? owner.release(decision)
      : owner.adjust(decision, actualCost),
  );
}

/**
 * Renews every `concurrency` lease of a stacked spend.
 *
 * @returns true when it has leases and every one was still held and is renewed
 */
export async function extendStack(stacked: StackedDecision): Promise<boolean> {
  const leases = stacked.decisions.filter(
    (d) => d.receipt.spent && d.receipt.algorithm === 'concurrency',
  );
  if (leases.length === 0) return false;
  // Each lease is renewed on its own; one that fails is thrown after the others were tried.
  const renewed = await Promise.allSettled(
    leases.map((decision) => stackOwners.get(decision)!.extend(decision)),
  );
  const failed = renewed.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw asError(failed.reason);
  return renewed.every((r) => r.status === 'fulfilled' && r.value);
}
