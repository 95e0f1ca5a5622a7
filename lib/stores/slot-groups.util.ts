import { clusterSlot } from './cluster-slot.util';
import { storageKey } from './storage-key.util';
import type { SpendRequest, SpendResult, StackResult } from './store.interface';

/*
 * Cluster slot groups: which keys of a call (or of a stack of calls) share a slot, and how the
 * answers of several slot groups merge into the answer one script would have given.
 */

/** A script's answer for one request, with what merging slot groups needs. */
export type GroupResult = SpendResult & { readonly resetIfUnspentMs: number };

/** A slot group's own answer, with the indices (into the request's keys) it covered. */
export interface PartResult {
  readonly indices: readonly number[];
  readonly result: GroupResult;
}

/** What slot grouping needs of a request: its caller keys and policy (they make the stored keys). */
export type SlotRequest = { readonly keys: readonly string[]; readonly policy: string };

/** One slot group of a stack: per request, the indices of its keys in that slot (maybe none). */
export type StackGroup = ReadonlyArray<readonly number[]>;

/**
 * Every (request, key) of a stack grouped by Cluster slot, in slot order, with its slot (one
 * group, slot -1, off Cluster).
 */
export function stackGroups(
  prefix: string,
  cluster: boolean,
  requests: readonly SlotRequest[],
): Array<[slot: number, group: StackGroup]> {
  if (!cluster) return [[-1, requests.map((r) => r.keys.map((_, i) => i))]];
  const bySlot = new Map<number, number[][]>();
  requests.forEach((request, r) =>
    request.keys.forEach((key, i) => {
      const slot = clusterSlot(storageKey(prefix, key, request.policy, 0));
      let group = bySlot.get(slot);
      if (!group) bySlot.set(slot, (group = requests.map(() => [])));
      group[r]!.push(i);
    }),
  );
  return [...bySlot.entries()].sort(([a], [b]) => a - b);
}

/** The same request, narrowed to some of its keys. */
export function part<R extends { readonly keys: readonly string[] }>(
  request: R,
  indices: readonly number[],
): R {
  if (indices.length === request.keys.length) return request;
  return { ...request, keys: indices.map((i) => request.keys[i]!) };
}

/**
 * One answer from the answers of several slot groups, as if one script had seen every key: all
 * must allow; the least room binds; the longest wait refuses; the latest instant decided at is the
 * decision's, and each key keeps its own.
 */
export function merge(
  request: SpendRequest,
  parts: readonly PartResult[],
  allowed = parts.every(({ result }) => result.allowed),
): SpendResult {
  let room = Infinity;
  let bindingLimit = 0;
  let refusal: { wait: number; key: number; limit: number } | undefined;
  let resetAfterMs = 0;
  let blockedUntil = 0;
  let at = -Infinity;
  const atByKey: number[] = new Array<number>(request.keys.length);
  const marks: number[] = new Array<number>(request.keys.length).fill(0);
  for (const { indices, result } of parts) {
    const partRoom = result.allowed ? result.remaining + request.cost : result.remaining;
    if (partRoom < room || (partRoom === room && result.limitIndex < bindingLimit)) {
      room = partRoom;
      bindingLimit = result.limitIndex;
    }
    if (!result.allowed && result.blockedKeyIndex >= 0) {
      // The longest wait refuses; on a tie, the key named first (as one script would choose).
      const key = indices[result.blockedKeyIndex]!;
      const wait = result.retryAfterMs;
      if (!refusal || wait > refusal.wait || (wait === refusal.wait && key < refusal.key)) {
        refusal = { wait, key, limit: result.limitIndex };
      }
    }
    if (!allowed && result.blockedUntil !== undefined && result.blockedUntil > blockedUntil) {
      blockedUntil = result.blockedUntil;
    }
    const reset = allowed || !result.allowed ? result.resetAfterMs : result.resetIfUnspentMs;
    resetAfterMs = Math.max(resetAfterMs, reset);
    // The latest instant decided at, as one script that saw every key's state would answer it.
    if (result.at > at) at = result.at;
    indices.forEach((i, n) => {
      atByKey[i] = result.at;
      marks[i] = result.resetMarks?.[n] ?? 0;
    });
  }
  return {
    allowed,
    remaining: allowed ? room - request.cost : room, // a refusal spends nothing
    limitIndex: refusal ? refusal.limit : bindingLimit, // the refusing limit binds
    retryAfterMs: refusal?.wait ?? 0,
    resetAfterMs,
    blockedKeyIndex: refusal?.key ?? -1,
    at,
    atByKey,
    ...(marks.some((mark) => mark > 0) && { resetMarks: marks }),
    ...(blockedUntil > 0 && { blockedUntil }),
  };
}

/** The requests of a stack, each narrowed to the keys one slot group holds (empty ones dropped). */
export function narrow(requests: readonly SpendRequest[], group: StackGroup): SpendRequest[] {
  const out: SpendRequest[] = [];
  requests.forEach((request, r) => {
    if (group[r]!.length > 0) out.push(part(request, group[r]!));
  });
  return out;
}

/** One stack answer from the answers of its slot groups, as if one script had seen every key. */
export function mergeStack(
  requests: readonly SpendRequest[],
  groups: ReadonlyArray<{ group: StackGroup; results: readonly GroupResult[] }>,
  allowed: boolean,
): StackResult {
  const perRequest: PartResult[][] = requests.map(() => []);
  for (const { group, results } of groups) {
    let n = 0;
    requests.forEach((_, r) => {
      if (group[r]!.length > 0) perRequest[r]!.push({ indices: group[r]!, result: results[n++]! });
    });
  }
  let refusingIndex = -1;
  let refusingWait = 0;
  const at = groups[0]!.results[0]!.at;
  const results = requests.map((request, r) => {
    // A request whose keys all sit in groups that could not be read (a failed peek after the
    // refusal): nothing is known of it, and nothing was spent on it.
    if (perRequest[r]!.length === 0) {
      return {
        allowed,
        remaining: 0,
        limitIndex: 0,
        retryAfterMs: 0,
        resetAfterMs: 0,
        blockedKeyIndex: -1,
        at,
      };
    }
    const merged = merge(request, perRequest[r]!, allowed);
    // The longest wait refuses; ties go to the first request (as the script chooses).
    if (merged.blockedKeyIndex >= 0 && (refusingIndex < 0 || merged.retryAfterMs > refusingWait)) {
      refusingIndex = r;
      refusingWait = merged.retryAfterMs;
    }
    return merged;
  });
  return { allowed, refusingIndex, results };
}

/** The earliest deadline of a stack's requests. */
export function earliest(requests: readonly SpendRequest[]): number | undefined {
  let at: number | undefined;
  for (const { deadlineAt } of requests) {
    if (deadlineAt !== undefined && (at === undefined || deadlineAt < at)) at = deadlineAt;
  }
  return at;
}

/** The values of the promises that fulfilled, in order (the rejected ones are left out). */
export async function settled<T>(promises: ReadonlyArray<Promise<T>>): Promise<T[]> {
  const outcomes = await Promise.allSettled(promises);
  return outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
}
