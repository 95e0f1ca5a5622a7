import { AsyncLocalStorage } from 'node:async_hooks';
import type { Attempt } from '../../core/attempt';

/** The attempt of one handler call outside HTTP, and the arguments that identify the call. */
interface AttemptScope {
  readonly args: readonly unknown[];
  readonly attempt: Attempt;
}

// Outside HTTP there is no request object to leave the attempt on: a GraphQL request runs many
// resolvers, a WebSocket carries many messages at once, and message data may be a bare string.
// The interceptor calls `next.handle()` inside this scope; Nest binds the handler's deferred
// start to the async context of that call, so the parameter decorator reads it back.
const storage = new AsyncLocalStorage<AttemptScope>();

/**
 * Runs `fn` (the interceptor's `next.handle()`) with `attempt` as the attempt of the handler call
 * whose arguments are `args`.
 *
 * @example
 * const source = runInAttemptScope(context.getArgs(), attempt, () => next.handle());
 */
export function runInAttemptScope<T>(args: readonly unknown[], attempt: Attempt, fn: () => T): T {
  return storage.run({ args, attempt }, fn);
}

/**
 * The attempt an interceptor began for the handler call whose arguments are `args`, if any.
 * Nest may hand the parameter decorator a copy of the argument list, so the arguments are
 * compared one by one.
 *
 * @example
 * const attempt = scopedAttempt(context.getArgs());
 */
export function scopedAttempt(args: readonly unknown[]): Attempt | undefined {
  const scope = storage.getStore();
  if (!scope) return undefined;
  const length = Math.min(scope.args.length, args.length);
  if (length === 0) return undefined;
  for (let i = 0; i < length; i++) if (scope.args[i] !== args[i]) return undefined;
  return scope.attempt;
}
