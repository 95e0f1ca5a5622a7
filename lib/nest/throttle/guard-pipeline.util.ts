import type { Decision } from '../../core/decision';
import type { Keys } from '../../core/keys.util';
import { Limiter } from '../../core/limiter';
import type { LimiterRegistry } from '../registry/limiter.registry';
import type { ResolvedPolicy } from '../../core/policy';
import type { HeaderLayer } from './rate-limit-layers.util';
import { REQUEST_THROTTLED } from '../module/redlimit.constants';
import type { PolicyRef, ThrottleMetadata } from './redlimit.metadata';
import type { RedlimitAccess } from '../access/redlimit-access.service';
import type { HttpResponseLike } from '../../http/http-request.util';
import { routeKey } from '../../http/throttle-key.util';
import { policyNamesFor } from '../registry/policy-names.util';
import type { RedlimitHttp } from '../contexts/redlimit-http.service';
import type { RequestView } from './request-view';
import { requestCost } from './request-cost.util';

/** Guard classes that charged a non-HTTP call, by the call's argument list. */
const chargedCalls = new WeakMap<object, Set<unknown>>();

/**
 * True when this guard class already charged the call (e.g. it is both `APP_GUARD` and in
 * `@UseGuards`): an HTTP request, a resolver call, a message is charged once per guard class.
 * Marks the call charged by `guardClass` otherwise.
 *
 * @example
 * if (chargedBefore(view, this.constructor)) return true;
 */
export function chargedBefore(view: RequestView, guardClass: unknown): boolean {
  let charged: Set<unknown>;
  if (view.type === 'http') {
    charged = (view.call as Record<symbol, Set<unknown> | undefined>)[REQUEST_THROTTLED] ??=
      new Set();
  } else {
    // Every guard of one call sees the same argument list; a GraphQL request runs many calls.
    charged = chargedCalls.get(view.call) ?? new Set();
    if (charged.size === 0) chargedCalls.set(view.call, charged); // a stored one is never empty
  }
  if (charged.has(guardClass)) return true;
  charged.add(guardClass);
  return false;
}

/** A layer the guard spends: as declared, with its limiter when the route plan knows it ahead. */
export interface GuardLayer {
  readonly layer: ThrottleMetadata;
  readonly limiter?: Limiter;
}

/** One layer ready to spend: its limiter, caller keys and cost. */
export interface Part {
  readonly limiter: Limiter;
  readonly keys: Keys;
  readonly cost?: number;
}

/** The caller keys of a layer without a key function: by the guard's tracker. */
export type TrackerKeys = (
  view: RequestView,
  layer: ThrottleMetadata,
  limiter: Limiter,
) => Keys | PromiseLike<Keys>;

/** A spend that may hold a `concurrency` lease, to release once the handler settled. */
export interface SpentLease {
  readonly limiter: Limiter;
  readonly decision: Decision;
}

/** What one decision over every layer of a call came to. */
export interface Spent {
  /** Whether every layer allowed. */
  readonly allowed: boolean;
  /** The decision the response describes: the refusing layer's, else the one with least left. */
  readonly decision: Decision;
  /** Its policy. */
  readonly policy: ResolvedPolicy;
  /** With several policies, each one's decision, in order; the shown one at {@link shown}. */
  readonly stack?: readonly HeaderLayer[];
  /** The index of {@link decision} in {@link stack}. */
  readonly shown: number;
  /** The spends that may hold a `concurrency` lease. */
  readonly leases: readonly SpentLease[];
}

const NO_LEASES: readonly SpentLease[] = Object.freeze([]);

/**
 * The layers a spend's headers describe: the stack, or the one policy's decision.
 *
 * @example
 * recordHeaderLayers(view, spentLayers(spent));
 */
export function spentLayers(spent: Spent): readonly HeaderLayer[] {
  return spent.stack ?? [{ decision: spent.decision, policy: spent.policy }];
}

/**
 * Every layer's limiter, keys and cost; synchronous unless a policy resolver, a key function or
 * a hook answers with a promise. Every layer is started even when an earlier one failed, as
 * `Promise.all` over async functions would.
 *
 * @example
 * const ready = partsOf(view, plan.layers, registry, http, trackerKeys);
 * const spent = await spend(Array.isArray(ready) ? ready : await ready);
 */
export function partsOf(
  view: RequestView,
  layers: readonly GuardLayer[],
  registry: LimiterRegistry,
  http: RedlimitHttp,
  trackerKeys: TrackerKeys,
): Part[] | Promise<Part[]> {
  const parts: Array<Part | PromiseLike<Part>> = [];
  let pending = false;
  for (const planned of layers) {
    let part: Part | PromiseLike<Part>;
    try {
      part = partFor(view, planned, registry, http, trackerKeys);
    } catch (error) {
      part = rejected(error);
    }
    if (isPromiseLike(part)) pending = true;
    parts.push(part);
  }
  return pending ? Promise.all(parts.map((part) => Promise.resolve(part))) : (parts as Part[]);
}

function partFor(
  view: RequestView,
  { layer, limiter }: GuardLayer,
  registry: LimiterRegistry,
  http: RedlimitHttp,
  trackerKeys: TrackerKeys,
): Part | PromiseLike<Part> {
  if (limiter) return partOf(view, layer, limiter, http, trackerKeys);
  const { policy } = layer;
  if (typeof policy === 'function') {
    return registry
      .resolveFor(policy, view.context)
      .then((resolved) => partOf(view, layer, resolved, http, trackerKeys));
  }
  return partOf(view, layer, registry.resolve(policy), http, trackerKeys);
}

function partOf(
  view: RequestView,
  layer: ThrottleMetadata,
  limiter: Limiter,
  http: RedlimitHttp,
  trackerKeys: TrackerKeys,
): Part | PromiseLike<Part> {
  const keys = keysOf(view, layer, limiter, http, trackerKeys);
  const cost = requestCost(view.context, layer.cost, limiter);
  if (isPromiseLike(keys) || isPromiseLike(cost)) {
    return Promise.all([keys, cost]).then(([k, c]) => ({ limiter, keys: k, cost: c }));
  }
  return { limiter, keys, cost };
}

/** The caller keys of one layer: its key function's, else by API key or tracker and scope. */
function keysOf(
  view: RequestView,
  layer: ThrottleMetadata,
  limiter: Limiter,
  http: RedlimitHttp,
  trackerKeys: TrackerKeys,
): Keys | PromiseLike<Keys> {
  if (layer.key) return layer.key(view.context);
  if (layer.by === 'apiKey') {
    const request = view.request;
    if (request) {
      return http.apiKeyFor(request, view.context).then((apiKey) => {
        if (apiKey === undefined) return trackerKeys(view, layer, limiter);
        return layer.scope === 'app' ? apiKey : routeKey(view.route, apiKey);
      });
    }
  }
  return trackerKeys(view, layer, limiter);
}

/**
 * Sets the rate-limit headers of a spend: one layer's, or every layer's (the legacy ones
 * describing the refusing layer, else the one with the least left).
 *
 * @example
 * if (view.response) applySpentHeaders(http, view.response, spent);
 */
export function applySpentHeaders(
  http: RedlimitHttp,
  response: HttpResponseLike,
  spent: Spent,
): void {
  if (spent.stack) http.applyStackHeaders(response, spent.stack, spent.shown);
  else http.applyHeaders(response, spent.decision, spent.policy);
}

/**
 * A call the module's lists or `skipIf` decided: reported as one decision event per policy it
 * would have been charged under (`refs`), then refused (403 or the context's equivalent) or let
 * through without headers.
 *
 * @example
 * if (verdict !== undefined) return passUncharged(http.access, registry, view, refs, verdict);
 */
export async function passUncharged(
  access: RedlimitAccess,
  registry: LimiterRegistry,
  view: RequestView,
  refs: ReadonlyArray<PolicyRef | undefined>,
  verdict: 'denied' | 'skipped',
): Promise<true> {
  const names = policyNamesFor(registry, refs, view.context);
  access.report(verdict, Array.isArray(names) ? names : await names);
  if (verdict === 'denied') throw access.refusal(view.context);
  return true;
}

/**
 * Spends every part as one decision: one `consume` for a single policy, else one stacked
 * `Limiter.consumeAll` (layers of the same policy merged first, see {@link dedupe}).
 *
 * @example
 * const { allowed, decision } = await spend(parts);
 */
export function spend(parts: readonly Part[]): Promise<Spent> {
  const unique = parts.length === 1 ? parts : dedupe(parts);
  if (unique.length === 1) {
    const { limiter, keys, cost } = unique[0]!;
    const { policy } = limiter;
    return limiter.consume(callerKeys(keys), { cost }).then((decision) => ({
      allowed: decision.allowed,
      decision,
      policy,
      shown: 0,
      leases: policy.algorithm === 'concurrency' ? [{ limiter, decision }] : NO_LEASES,
    }));
  }
  return Limiter.consumeAll(unique).then((stacked) => {
    // The response describes the refusing layer, else the one with the least left.
    let shown = 0;
    stacked.decisions.forEach((d, i) => {
      const least = d.remaining < stacked.decisions[shown]!.remaining;
      if (stacked.refusedBy ? d === stacked.refusedBy : least) shown = i;
    });
    const stack = stacked.decisions.map((d, i) => ({
      decision: d,
      policy: unique[i]!.limiter.policy,
    }));
    const leases = stacked.decisions.map((d, i) => ({ limiter: unique[i]!.limiter, decision: d }));
    const { decision, policy } = stack[shown]!;
    return { allowed: stacked.allowed, decision, policy, stack, shown, leases };
  });
}

/** A promise rejected with `error`, as an async function that threw it returns. */
function rejected(error: unknown): Promise<never> {
  // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as caught
  return Promise.reject(error);
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * A part's keys as the limiter takes them: a string or an array as they are (the limiter copies
 * and checks them), any other iterable as an array.
 */
function callerKeys(keys: Keys): Keys {
  return typeof keys === 'string' || Array.isArray(keys) ? keys : [...keys];
}

/**
 * Layers of the same policy become one part (a stack spends each policy on each key once): the
 * union of their keys, at the highest of their costs.
 */
function dedupe(
  parts: readonly Part[],
): Array<{ limiter: Limiter; keys: string[]; cost?: number }> {
  const byLimiter = new Map<Limiter, { limiter: Limiter; keys: string[]; cost?: number }>();
  for (const { limiter, keys, cost } of parts) {
    const list = typeof keys === 'string' ? [keys] : [...keys];
    const same = byLimiter.get(limiter);
    if (!same) {
      byLimiter.set(limiter, { limiter, keys: list, ...(cost !== undefined && { cost }) });
      continue;
    }
    for (const key of list) if (!same.keys.includes(key)) same.keys.push(key);
    if (cost !== undefined) same.cost = Math.max(same.cost ?? 1, cost);
  }
  return [...byLimiter.values()];
}
