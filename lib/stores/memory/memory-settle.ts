import type { LimitRule } from '../../core/policy';
import { spendSequence } from '../spend-id.util';
import { stateLifetimeMs } from '../state-lifetime.util';
import { ledgerKey, storageKey } from '../storage-key.util';
import type { RefundRequest } from '../store.interface';
import { concurrencyMemory } from './concurrency.memory';
import { type Ledger, ledgerEntry, remember, settled } from './memory-ledger';
import { MEMORY_MODELS } from './memory-models';
import type { MemoryTable } from './memory-table';
import type { SlidingLogState } from './sliding-log.memory';

// Settling a spend of a `MemoryStore` by its receipt, as `lua/lib/refund-frame.lua` does: a
// refund or an adjustment per caller key, recorded in the key's ledger; a lease released.

/** Runs `fn` on every (key, limit) state of a concurrency request that holds leases. */
export function eachLease(
  table: MemoryTable,
  request: RefundRequest,
  now: number,
  fn: (name: string, state: SlidingLogState, rule: LimitRule) => void,
): void {
  for (const key of request.keys) {
    request.limits.forEach((rule, l) => {
      const name = storageKey('', key, request.policy, l);
      const state = table.read(name, concurrencyMemory, now) as SlidingLogState | undefined;
      if (state !== undefined) fn(name, state, rule);
    });
  }
}

/** Releases a lease: removes its members, whatever their instant; no ledger (see concurrency/refund.lua). */
export function releaseLease(table: MemoryTable, request: RefundRequest, now: number): void {
  eachLease(table, request, now, (name, state, rule) => {
    const next = concurrencyMemory.refund(state, rule, {
      ...request,
      now,
      keep: 0,
      reserved: request.cost,
    });
    if (next === null) table.delete(name);
    else if (next !== undefined) table.write(name, next.state, next.expiresAt);
  });
}

/**
 * A refund, or (with `target`) an adjustment to that cost, per caller key; mirrors
 * `lua/lib/refund-frame.lua`.
 */
export function settleSpend(
  table: MemoryTable,
  spendTag: string,
  request: RefundRequest,
  now: number,
  target?: number,
): void {
  const algorithm = MEMORY_MODELS[request.algorithm];
  if (request.algorithm === 'concurrency') {
    if (target === undefined) releaseLease(table, request, now);
    return;
  }
  const lifetime = stateLifetimeMs(request.algorithm, request.limits);
  const { spendId, at } = request;
  for (const [k, key] of request.keys.entries()) {
    const ledgerName = ledgerKey('', key, request.policy);
    const ledger = table.live(ledgerName, now) as Ledger | undefined;
    const entry =
      spendId && ledger && now - at <= lifetime ? ledgerEntry(ledger, spendId, at) : undefined;
    const adjusted = entry?.adjusted;
    const charged = chargedStates(table, spendTag, request, key);
    // (an adjusted spend is not adjusted again)
    if (
      (target !== undefined && adjusted) ||
      !charged.includes(true) ||
      settled(ledger, request, k, now, lifetime, entry)
    )
      continue;
    const current = adjusted?.cost ?? request.cost;
    const up = target !== undefined && target > current;
    const context = {
      spendId,
      at,
      now,
      reserved: request.cost,
      keep: target === undefined ? 0 : Math.min(current, target),
      cost: target === undefined ? current : Math.abs(target - current),
    };
    let given = false;
    if (context.cost > 0) {
      request.limits.forEach((rule, l) => {
        if (!charged[l]) return; // a state written since: not the one the spend charged
        const name = storageKey('', key, request.policy, l);
        const state = table.read(name, algorithm, now);
        const next = up
          ? algorithm.charge(state, rule, context)
          : state === undefined
            ? undefined
            : algorithm.refund(state, rule, context);
        if (next === undefined) return;
        given = true;
        if (next === null) table.delete(name);
        else table.write(name, next.state, next.expiresAt);
      });
    }
    if (!spendId || (target === undefined && !given)) continue;
    const marked = ledger ?? { members: new Map<string, number>() };
    // A registered spend stays registered while it still holds something to give back (an
    // adjustment to more than 0); its refund, or an adjustment to 0, settles it.
    const pending = entry?.pending === true;
    if (adjusted) marked.members.delete(adjusted.member);
    else if (pending) marked.members.delete(`+${spendId}`);
    const member =
      target === undefined
        ? spendId
        : pending && target > 0
          ? `+${spendId}=${target}`
          : `${spendId}=${target}`;
    remember(marked, member, at, now, lifetime);
    // As long as the spend can weigh (its `at` may be ahead of a clock that stepped back),
    // never shorter than before.
    const expiresAt = Math.max(now, at) + marked.lifetime!;
    table.write(ledgerName, marked, Math.max(expiresAt, table.entry(ledgerName)?.expiresAt ?? 0));
  }
}

/**
 * Per limit, whether the key's state there may be the one the spend charged: not when it was born
 * after the spend (pushed out under `maxKeys`, or emptied — drained, expired, refunded to nothing
 * — and written again), nor anywhere when the spend was never charged here (another store's or
 * process's, e.g. a fallback receipt refunded elsewhere). A receipt settles nothing where it is
 * false, and nothing on the key when it is false on every limit, as after a reset: else a caller
 * pushed out while attempts were in flight would get a full budget and its old spends back. A
 * state written again under one limit says nothing of the others (a short limit's state empties
 * and is written again while the spend still weighs on a longer one), as in Redis.
 */
function chargedStates(
  table: MemoryTable,
  spendTag: string,
  request: RefundRequest,
  key: string,
): boolean[] {
  if (request.spendId === undefined) return request.limits.map(() => true);
  const sequence = spendSequence(request.spendId, spendTag);
  return request.limits.map(
    (_, l) =>
      sequence !== undefined &&
      (table.entry(storageKey('', key, request.policy, l))?.born ?? 0) <= sequence,
  );
}
