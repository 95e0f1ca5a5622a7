import type { ExecutionContext } from '@nestjs/common';
import type { PolicyOptions } from '../core/policy';
import { REDLIMIT_METADATA } from './redlimit.constants';

/** Caller keys computed from a request: one key or several, charged as one decision. */
export type ThrottleKeyFn = (
  context: ExecutionContext,
) => string | readonly string[] | Promise<string | readonly string[]>;

/** What `@Throttle` records on a handler or controller. */
export interface ThrottleMetadata {
  /** A policy name, or an inline policy (registered on first use). */
  readonly policy: string | PolicyOptions;
  /** Replaces the default key (method + route template + client IP). */
  readonly key?: ThrottleKeyFn;
  /** Units charged per request. Default 1. */
  readonly cost?: number;
}

/** A request value `@Attempt` keys on: `'ip'`, `'user'`, a field name, or a function. */
export type AttemptPart = 'ip' | 'user' | (string & Record<never, never>) | AttemptPartFn;

/** A computed part of an `@Attempt` key; `undefined` or `''` counts as a missing value. */
export type AttemptPartFn = (
  context: ExecutionContext,
) => string | number | undefined | Promise<string | number | undefined>;

/** How a handler guarded by `@Attempt` ended; see {@link AttemptOptions.refundOn}. */
export type AttemptOutcome =
  { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

/** Options of `@Attempt(parts, options)`. */
export interface AttemptOptions {
  /** Policy name or inline policy. Default: the module's `defaultPolicy`. */
  readonly policy?: string | PolicyOptions;
  /** Units charged on every key. Default 1. */
  readonly cost?: number;
  /**
   * When the spend is handed back besides an explicit `attempt.refund()`: `'success'` (the
   * handler returned without throwing) or a predicate on the outcome. Default: only on
   * `attempt.refund()`.
   */
  readonly refundOn?: 'success' | ((outcome: AttemptOutcome, context: ExecutionContext) => boolean);
}

/** What `@Attempt` records on a handler. */
export interface AttemptMetadata extends AttemptOptions {
  /** The request values keyed on, each its own key in one decision. */
  readonly parts: readonly AttemptPart[];
}

/**
 * Everything redlimit's decorators record on one handler or controller, under the single key
 * {@link REDLIMIT_METADATA}. `throttle: false` is `@SkipThrottle()`.
 */
export interface RedlimitMetadata {
  /** `@Throttle` settings, or `false` for `@SkipThrottle()`. */
  readonly throttle?: ThrottleMetadata | false;
  /** `@Attempt` settings (handlers only). */
  readonly attempt?: AttemptMetadata;
}

/**
 * Merges fields into the redlimit metadata of a controller class or handler function.
 *
 * @example
 * defineRedlimitMetadata(SignInController.prototype.signIn, { throttle: false });
 */
export function defineRedlimitMetadata(target: object, patch: RedlimitMetadata): void {
  const current = Reflect.getOwnMetadata(REDLIMIT_METADATA, target) as RedlimitMetadata | undefined;
  Reflect.defineMetadata(REDLIMIT_METADATA, { ...current, ...patch }, target);
}

/**
 * The redlimit metadata that applies to a handler: each field from the handler when it sets it,
 * else from its controller (so a handler's `@Throttle` beats its controller's `@SkipThrottle()`
 * and the other way round).
 *
 * @example
 * const { throttle } = readRedlimitMetadata(context.getHandler(), context.getClass());
 */
export function readRedlimitMetadata(handler: object, controller: object): RedlimitMetadata {
  const own = Reflect.getMetadata(REDLIMIT_METADATA, handler) as RedlimitMetadata | undefined;
  const inherited = Reflect.getMetadata(REDLIMIT_METADATA, controller) as
    RedlimitMetadata | undefined;
  const throttle = own?.throttle ?? inherited?.throttle;
  return {
    ...(throttle !== undefined && { throttle }),
    ...(own?.attempt !== undefined && { attempt: own.attempt }),
  };
}
