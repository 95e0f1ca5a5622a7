import type { ExecutionContext } from '@nestjs/common';
import type { LimiterRegistry } from './limiter.registry';
import type { PolicyRef } from '../throttle/redlimit.metadata';

/**
 * The names of the policies a call would be charged under, for decision events of calls that
 * were not charged (denied or skipped by the module's lists): names, inline policies and the
 * default policy directly; resolvers are run (asynchronously). A reference that cannot be
 * resolved (a throwing resolver, an unknown name) is left out, so reporting never fails the call.
 * Synchronous unless a resolver is among `refs`.
 *
 * @example
 * const names = await policyNamesFor(registry, ['api', loginResolver], context);
 */
export function policyNamesFor(
  registry: LimiterRegistry,
  refs: readonly (PolicyRef | undefined)[],
  context: ExecutionContext,
): string[] | Promise<string[]> {
  const names: Array<string | undefined> = [];
  const pending: Array<Promise<string | undefined>> = [];
  for (const ref of refs) {
    if (typeof ref === 'function') {
      pending.push(
        registry.resolveFor(ref, context).then(
          (limiter) => limiter.policy.name,
          () => undefined,
        ),
      );
      continue;
    }
    try {
      names.push(registry.resolve(ref).policy.name);
    } catch {
      names.push(undefined);
    }
  }
  const known = (list: Array<string | undefined>) =>
    list.filter((name): name is string => name !== undefined);
  if (pending.length === 0) return known(names);
  return Promise.all(pending).then((resolved) => known([...names, ...resolved]));
}
