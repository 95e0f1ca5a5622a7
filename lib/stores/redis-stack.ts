import { monotonicNow } from '../core/clock.util';
import { nextSpendId } from './spend-id.util';
import { costArg, resetMarks, rulesArg } from './script-reply.util';
import type { ScriptId } from './scripts';
import {
  earliest,
  type GroupResult,
  mergeStack,
  narrow,
  settled,
  type SlotRequest,
  type StackGroup,
  stackGroups,
} from './slot-groups.util';
import type { SlotTurns } from './slot-turns';
import { storageKeysWithLedgers } from './storage-key.util';
import type { SpendRequest, StackResult } from './store.interface';

// Stacks on a RedisStore: several requests decided all or nothing (stack/consume), and on a
// Cluster a spend whose keys sit in several slots: one run per slot group, in the slots' turns,
// with the groups already charged refunded when a later one refuses or fails.

/** What a {@link StackRuns} uses of its `RedisStore`: its scripts, clocks and Cluster slots. */
export interface StoreCalls {
  /** Prepended to every stored key. */
  readonly prefix: string;
  /** Whether the client is a Cluster (slot groups, slot turns). */
  readonly cluster: boolean;
  /** Whether the store reads a custom clock (then the Redis clock is never observed). */
  readonly customClock: boolean;
  /** ms added to absolute expiries (0 on the Redis clock). */
  readonly expiryOffsetMs: number;
  /** Cluster: issue order per slot. */
  readonly slotTurns: SlotTurns;
  /** Runs a script (after the decisions queued before it). */
  run(id: ScriptId, keys: string[], args: Array<string | number>): Promise<unknown>;
  /** The clock's reading for ARGV, or '' to have the script read Redis TIME. */
  now(): string;
  /** The caller's deadline on the script's clock, or '' for none. */
  knownDeadline(deadlineAt: number | undefined): string;
  /** After a reply past the deadline: returns when the call should go once more, else throws. */
  lateReply(deadlineAt: number | undefined, receivedAt: number, retried: boolean): void;
  /** Corrects the estimate of the Redis clock from a reply's reading. */
  observe(sentAt: number, receivedAt: number, redisNow: number): void;
  /** Refunds one slot group's part of a spend; `record: false` for a compensation. */
  refundPart(
    request: SpendRequest,
    at: number,
    spendId: string | undefined,
    resetMarks: readonly number[] | undefined,
    record: boolean,
  ): Promise<number>;
}

/** The stacks and cross-slot spends of one `RedisStore` (see the module comment). */
export class StackRuns {
  constructor(private readonly store: StoreCalls) {}

  async spend(requests: readonly SpendRequest[]): Promise<StackResult> {
    const spendId = nextSpendId();
    const groups = this.stackGroups(requests);
    if (groups.length === 1) {
      return this.whenSlotsFree(groups, () => this.decide(requests, true, spendId));
    }
    // Every slot is claimed now, in issue order, and held until the call is over (compensation
    // included): operations issued after it never see its tentative charges.
    const turns = groups.map(([slot]) => this.store.slotTurns.claim(slot));
    const inTurn = async <T>(g: number, send: () => Promise<T>): Promise<T> => {
      await turns[g]!.before;
      return send();
    };
    const charged: Array<{ group: StackGroup; results: readonly GroupResult[] }> = [];
    try {
      for (const [g, [, group]] of groups.entries()) {
        let answer;
        try {
          answer = await inTurn(g, () => this.decide(narrow(requests, group), true, spendId, true));
        } catch (error) {
          await this.compensate(requests, charged, spendId);
          throw error;
        }
        const { results } = answer;
        if (!answer.allowed) {
          await this.compensate(requests, charged, spendId);
          // Peeks that fail are left out: the refusal stands, its Retry-After a lower bound.
          const peeks = await settled(
            groups.slice(g + 1).map(async ([, rest], n) => ({
              group: rest,
              results: (
                await inTurn(g + 1 + n, () => {
                  // Refused as a whole: where a policy locks out, the keys out of budget in
                  // these groups are locked out as in one script; otherwise nothing is written.
                  const narrowed = narrow(requests, rest);
                  const locks = narrowed.some((r) => r.block !== undefined);
                  return this.decide(narrowed, locks ? 'refuse' : false);
                })
              ).results,
            })),
          );
          return mergeStack(requests, [...charged, { group, results }, ...peeks], false);
        }
        charged.push({ group, results });
      }
    } finally {
      for (const turn of turns) turn.release();
    }
    const merged = mergeStack(requests, charged, true);
    return { ...merged, results: merged.results.map((r) => ({ ...r, spendId })) };
  }

  async peek(requests: readonly SpendRequest[]): Promise<StackResult> {
    const groups = this.stackGroups(requests);
    if (groups.length === 1) {
      return this.whenSlotsFree(groups, () => this.decide(requests, false));
    }
    const parts = await this.whenSlotsFree(groups, () =>
      Promise.all(
        groups.map(async ([, group]) => ({
          group,
          results: (await this.decide(narrow(requests, group), false)).results,
        })),
      ),
    );
    return mergeStack(
      requests,
      parts,
      parts.every(({ results }) => results.every((r) => r.allowed)),
    );
  }

  /** Indices of the request's keys, grouped by Cluster slot in slot order (one group otherwise). */
  slotGroups(request: SlotRequest): Array<[slot: number, indices: readonly number[]]> {
    return this.stackGroups([request]).map(([slot, [indices]]) => [slot, indices!]);
  }

  /** Every (request, key) of a stack grouped by Cluster slot (one group, slot -1, off Cluster). */
  stackGroups(requests: readonly SlotRequest[]): Array<[slot: number, group: StackGroup]> {
    return stackGroups(this.store.prefix, this.store.cluster, requests);
  }

  /** Runs `send` in these slots' turn on Cluster (see {@link SlotTurns}); at once off Cluster. */
  whenSlotsFree<T>(
    groups: ReadonlyArray<readonly [number, unknown]>,
    send: () => Promise<T>,
  ): Promise<T> {
    return this.store.cluster ? this.store.slotTurns.whenFree(groups, send) : send();
  }

  private async compensate(
    requests: readonly SpendRequest[],
    charged: ReadonlyArray<{ group: StackGroup; results: readonly GroupResult[] }>,
    spendId: string,
  ): Promise<void> {
    // A refund that fails leaves a charge in place: the safe side, never extra budget.
    await Promise.allSettled(
      charged.flatMap(({ group, results }) => {
        const parts = narrow(requests, group);
        return parts.map((request, n) => {
          const { at, resetMarks } = results[n]!;
          return this.store.refundPart(request, at, spendId, resetMarks, false);
        });
      }),
    );
  }

  /**
   * One stack/consume run over the requests (all in one slot on Cluster). `compensable`: one slot
   * group of a cross-slot spend, which a later group's refusal may make us refund. `spend`
   * 'refuse': a group after a refusing one, refused whatever it holds (it writes only lockouts).
   */
  private async decide(
    requests: readonly SpendRequest[],
    spend: boolean | 'refuse',
    spendId?: string,
    compensable = false,
    retried = false,
  ): Promise<StackResult & { readonly results: readonly GroupResult[] }> {
    const deadlineAt = earliest(requests);
    const deadline = spend !== false ? this.store.knownDeadline(deadlineAt) : '';
    const keys: string[] = [];
    const args: Array<string | number> = [
      this.store.now(),
      this.store.expiryOffsetMs,
      compensable ? '1' : '0',
      spend === 'refuse' ? '2' : spend ? '1' : '0',
      spendId ?? '',
      deadline,
      requests.length,
    ];
    for (const request of requests) {
      for (const key of storageKeysWithLedgers(
        this.store.prefix,
        request.keys,
        request.policy,
        request.limits.length,
        request.block !== undefined,
      ))
        keys.push(key);
      args.push(
        request.algorithm,
        costArg(request, spend === true),
        request.keys.length,
        rulesArg(request),
      );
    }
    const sentAt = monotonicNow();
    const reply = (await this.store.run('stack/consume', keys, args)) as number[];
    if (reply[0] === -1) {
      if (!this.store.customClock) this.store.observe(sentAt, monotonicNow(), reply[1]!);
      this.store.lateReply(deadlineAt, monotonicNow(), retried);
      return this.decide(requests, spend, spendId, compensable, true);
    }
    const allowed = reply[0] === 1;
    const at = reply[3]!;
    if (!this.store.customClock) this.store.observe(sentAt, monotonicNow(), reply[2]!);
    let next = 4; // each part: six numbers, then its reset marks
    const results = requests.map(({ keys: { length }, block }): GroupResult => {
      const o = next;
      const marks = resetMarks(reply, o + 6, length);
      next += 6 + length;
      const blockedUntil = block === undefined ? 0 : reply[next++]!;
      return {
        allowed,
        remaining: reply[o]!,
        limitIndex: reply[o + 1]! - 1,
        retryAfterMs: reply[o + 2]!,
        resetAfterMs: reply[o + 3]!,
        blockedKeyIndex: reply[o + 4]! - 1,
        at,
        resetIfUnspentMs: reply[o + 5]!,
        ...(spendId !== undefined && allowed && { spendId }),
        ...(marks && { resetMarks: marks }),
        ...(blockedUntil > 0 && { blockedUntil }),
      };
    });
    return { allowed, refusingIndex: reply[1]! - 1, results };
  }
}
