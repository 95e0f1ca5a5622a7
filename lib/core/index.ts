// The public face of the core: what `redlimit` (and `redlimit/nest`) export from it. Helpers the
// stores, the Nest layer and the CLI share (key and cost normalisation, event builders, the
// monotonic clock, policy resolution) are imported from their files, not from here.
export { Attempt, type AttemptStack } from './attempt';
export type { BlockedBy, Decision, Receipt, StackedDecision, StoreFailure } from './decision';
export { type Duration, parseDuration } from './duration.util';
export { RateLimitedError, StoreTimeoutError, StoreUnavailableError } from './errors';
export {
  type DecisionEvent,
  DecisionEvents,
  type DecisionListener,
  type DecisionWatcher,
  type DecisionOperation,
  type DecisionOutcome,
} from './events';
export type { Keys } from './keys.util';
export {
  type ConsumeOptions,
  Limiter,
  type LimiterOptions,
  type StackPart,
  type WaitForOptions,
} from './limiter';
export type {
  Algorithm,
  BlockOptions,
  BlockRule,
  FailMode,
  LimitOptions,
  LimitRule,
  PolicyOptions,
  RateAlgorithm,
  ResolvedPolicy,
} from './policy';
export {
  applyChange,
  type OverrideBook,
  type OverrideHistoryEntry,
  type OverrideWrite,
  type PolicyChange,
  type PolicyOverride,
} from './overrides';
export {
  type ClearOverrideOptions,
  type EffectivePolicy,
  type OverrideOptions,
  PolicyOverrides,
  type PolicyOverridesOptions,
} from './policy-overrides';
export type { Sleep, WaitOptions } from './wait';
