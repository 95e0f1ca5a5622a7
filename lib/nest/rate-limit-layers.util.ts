import type { ExecutionContext } from '@nestjs/common';
import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import { redlimitContextType } from './execution-context.util';

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

/**
 * Remembers the layers whose headers a call's response carries (the guard's), so that a later
 * decision on the same call (the `@Attempt` interceptor's) adds itself to them instead of
 * replacing them.
 *
 * @example
 * recordHeaderLayers(context, [{ decision, policy: limiter.policy }]);
 */
export function recordHeaderLayers(
  context: ExecutionContext,
  layers: readonly HeaderLayer[],
): void {
  if (redlimitContextType(context) === 'http') {
    context.getArgByIndex<Record<symbol, unknown>>(0)[REQUEST_HEADER_LAYERS] = layers;
  } else {
    layersByCall.set(context.getArgs(), layers);
  }
}

/**
 * The layers recorded for this call by {@link recordHeaderLayers}; empty when none.
 *
 * @example
 * const all = [...recordedHeaderLayers(context), { decision, policy }];
 */
export function recordedHeaderLayers(context: ExecutionContext): readonly HeaderLayer[] {
  if (redlimitContextType(context) === 'http') {
    const request = context.getArgByIndex<Record<symbol, readonly HeaderLayer[] | undefined>>(0);
    return request[REQUEST_HEADER_LAYERS] ?? [];
  }
  return layersByCall.get(context.getArgs()) ?? [];
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
