import {
  refundOf,
  type SpendRequest,
  type SpendResult,
  type StackResult,
  type Store,
} from './store';

/**
 * A stacked decision on a store without `consumeStack` (one written before stacks): the requests
 * are spent one after another, and when one refuses (or fails), those already charged are given
 * back by receipt. Like Redis Cluster slot groups, this never over-admits, but under contention a
 * stack may be refused although it would have fitted. A peek reads every request at once.
 */
export async function sequentialStack(
  store: Store,
  requests: readonly SpendRequest[],
  spend: boolean,
): Promise<StackResult> {
  if (!spend) return combine(requests, await Promise.all(requests.map((r) => store.peek(r))));
  const charged: SpendResult[] = [];
  for (const [i, request] of requests.entries()) {
    let result: SpendResult;
    try {
      result = await store.consume(request);
    } catch (error) {
      await giveBack(store, requests, charged);
      throw error;
    }
    if (!result.allowed) {
      await giveBack(store, requests, charged);
      // The rest is read for an honest answer; a part that cannot be read is reported as fitting.
      const rest = await Promise.allSettled(requests.slice(i + 1).map((r) => store.peek(r)));
      const read = rest.map((o, n) =>
        o.status === 'fulfilled' ? o.value : unknown(requests[i + 1 + n]!, result.at),
      );
      return combine(requests, [...charged, result, ...read], false);
    }
    charged.push(result);
  }
  return combine(requests, charged, true);
}

/** Gives back what the stack had already charged; a refund that fails keeps its charge. */
async function giveBack(
  store: Store,
  requests: readonly SpendRequest[],
  charged: readonly SpendResult[],
): Promise<void> {
  await Promise.allSettled(charged.map((r, i) => store.refund(refundOf(requests[i]!, r))));
}

/** One stack answer from the parts' own answers (`allowed` given, or: every part allowed). */
function combine(
  requests: readonly SpendRequest[],
  results: readonly SpendResult[],
  allowed = results.every((r) => r.allowed),
): StackResult {
  let refusingIndex = -1;
  const out = results.map((r, i): SpendResult => {
    if (!r.allowed) {
      const wait = refusingIndex < 0 ? -1 : results[refusingIndex]!.retryAfterMs;
      if (r.retryAfterMs > wait) refusingIndex = i;
      return r;
    }
    if (allowed) return r;
    // Fitted (or was charged and given back) while another part refused: nothing is spent on it.
    return {
      allowed: false,
      remaining: r.remaining + requests[i]!.cost,
      limitIndex: r.limitIndex,
      retryAfterMs: 0,
      resetAfterMs: r.resetAfterMs,
      blockedKeyIndex: -1,
      at: r.at,
      ...(r.atByKey && { atByKey: r.atByKey }),
    };
  });
  return { allowed, refusingIndex, results: out };
}

/** The answer for a part that could not be read: it spent nothing, and nothing else is known. */
function unknown(request: SpendRequest, at: number): SpendResult {
  return {
    allowed: true,
    remaining: request.cost,
    limitIndex: 0,
    retryAfterMs: 0,
    resetAfterMs: 0,
    blockedKeyIndex: -1,
    at,
  };
}
