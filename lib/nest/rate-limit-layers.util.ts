import type { ExecutionContext } from '@nestjs/common';
import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import { redlimitContextType } from './execution-context.util';

/** One decided layer of a call, as its rate-limit headers describe it. */
export interface HeaderLayer {
  readonly decision: Decision;
  readonly policy: ResolvedPolicy;
}

/** Layers already described on a call's response, by request (HTTP) or argument list. */
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
  layersByCall.set(callOf(context), layers);
}

/**
 * The layers recorded for this call by {@link recordHeaderLayers}; empty when none.
 *
 * @example
 * const all = [...recordedHeaderLayers(context), { decision, policy }];
 */
export function recordedHeaderLayers(context: ExecutionContext): readonly HeaderLayer[] {
  return layersByCall.get(callOf(context)) ?? [];
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

/** Guards and interceptors of one call see the same request, or the same argument list. */
function callOf(context: ExecutionContext): object {
  return redlimitContextType(context) === 'http'
    ? context.getArgByIndex<object>(0)
    : context.getArgs();
}
