import type { Decision } from '../../core/decision';
import type { ResolvedPolicy } from '../../core/policy';
import type { RedlimitContextType } from '../contexts/execution-context.util';

/** One decided layer of a call, as its rate-limit headers describe it. */
export interface HeaderLayer {
  readonly decision: Decision;
  readonly policy: ResolvedPolicy;
}

/** Where an HTTP request keeps the layers described on its response. */
const REQUEST_HEADER_LAYERS = Symbol('redlimit:header-layers');

/**
 * Layers already described on the response of a call that is not an HTTP request, by argument
 * list. (An HTTP request keeps its own: a property costs less than a WeakMap entry per request.)
 */
const layersByCall = new WeakMap<object, readonly HeaderLayer[]>();

/** A call as {@link RequestView} names it: its type, and the object its guards share. */
interface CallRef {
  readonly type: RedlimitContextType;
  readonly call: object;
}

/**
 * Remembers the layers whose headers a call's response carries (the guard's), so that a later
 * decision on the same call (the `@Attempt` interceptor's) adds itself to them instead of
 * replacing them.
 *
 * @example
 * recordHeaderLayers(view, [{ decision, policy: limiter.policy }]);
 */
export function recordHeaderLayers(view: CallRef, layers: readonly HeaderLayer[]): void {
  if (view.type === 'http') (view.call as Record<symbol, unknown>)[REQUEST_HEADER_LAYERS] = layers;
  else layersByCall.set(view.call, layers);
}

/**
 * The layers recorded for this call by {@link recordHeaderLayers}; empty when none.
 *
 * @example
 * const all = [...recordedHeaderLayers(view), { decision, policy }];
 */
export function recordedHeaderLayers(view: CallRef): readonly HeaderLayer[] {
  if (view.type === 'http') {
    return (
      (view.call as Record<symbol, readonly HeaderLayer[] | undefined>)[REQUEST_HEADER_LAYERS] ?? []
    );
  }
  return layersByCall.get(view.call) ?? [];
}

/**
 * Which layer the one-limit legacy headers describe: the refusing one, else the one with the
 * least left (the first of equals).
 *
 * @example
 * shownLayer([{ decision: api }, { decision: login }]); // 1 when login has less left
 */
export function shownLayer(layers: ReadonlyArray<{ readonly decision: Decision }>): number {
  const refused = layers.findIndex(({ decision }) => !decision.allowed);
  if (refused >= 0) return refused;
  let shown = 0;
  layers.forEach(({ decision }, i) => {
    if (decision.remaining < layers[shown]!.decision.remaining) shown = i;
  });
  return shown;
}
