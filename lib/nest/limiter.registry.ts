import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Decision, StoreFailure } from '../core/decision';
import { Limiter, type LimiterOptions } from '../core/limiter';
import { type PolicyOptions, resolvePolicy } from '../core/policy';
import { REDLIMIT_LOGGER_CONTEXT, REDLIMIT_OPTIONS } from './redlimit.constants';
import { RedlimitConnection } from './redlimit-connection.service';
import { RedlimitEvents } from './redlimit-events.service';
import type { RedlimitModuleOptions } from './redlimit-options.interface';

/** Store failures are logged at most once per policy in this interval. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Every named policy of the module, as a ready {@link Limiter} on the module's store. Inject it to
 * rate-limit anything that is not a route, or to unlock a caller.
 *
 * @example
 * constructor(private readonly limits: LimiterRegistry) {}
 *
 * async sendOtp(phone: string) {
 *   await this.limits.get('otp').attempt(`phone:${phone}`, () => this.sms.send(phone));
 * }
 */
@Injectable()
export class LimiterRegistry {
  private readonly limiters = new Map<string, Limiter>();
  /** Inline decorator policies by identity: validated once, not on every request. */
  private readonly inline = new WeakMap<PolicyOptions, Limiter>();
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  private readonly lastFailureLogAt = new Map<string, number>();
  private readonly limiterOptions: LimiterOptions;
  /** The module's `defaultPolicy`, if any. */
  readonly defaultPolicy: string | undefined;

  constructor(
    private readonly connection: RedlimitConnection,
    @Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions,
    events: RedlimitEvents,
  ) {
    this.limiterOptions = {
      events,
      ...(options.failMode !== undefined && { failMode: options.failMode }),
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.failureRetryAfterMs !== undefined && {
        failureRetryAfterMs: options.failureRetryAfterMs,
      }),
      onStoreFailure:
        options.onStoreFailure ?? ((failure, policy) => this.logFailure(failure, policy)),
      onSettleError: (error, decision) => this.logSettleError(error, decision),
    };
    for (const [name, definition] of Object.entries(options.policies ?? {})) {
      this.register({ ...definition, name });
    }
    this.defaultPolicy = options.defaultPolicy;
    if (this.defaultPolicy !== undefined) this.get(this.defaultPolicy);
  }

  /**
   * The limiter of a named policy.
   *
   * @throws Error naming the known policies when there is none of that name
   */
  get(name: string): Limiter {
    const limiter = this.limiters.get(name);
    if (limiter) return limiter;
    const known = [...this.limiters.keys()].map((n) => `'${n}'`).join(', ');
    throw new Error(
      `redlimit: no policy named '${name}'; ` +
        (known ? `known policies: ${known}` : 'no policies are registered') +
        '. Add it to RedlimitModule.forRoot({ policies }) or LimiterRegistry.register().',
    );
  }

  /** Whether a policy of that name is registered. */
  has(name: string): boolean {
    return this.limiters.has(name);
  }

  /** Names of every registered policy. */
  get names(): string[] {
    return [...this.limiters.keys()];
  }

  /**
   * Adds a policy at runtime. Registering the same definition again returns the existing limiter.
   *
   * @throws RangeError when another policy already has that name (they would share stored state)
   * @throws TypeError / RangeError from the core when the policy is invalid
   */
  register(policy: PolicyOptions): Limiter {
    const resolved = resolvePolicy(policy);
    const existing = this.limiters.get(resolved.name);
    if (existing) {
      if (JSON.stringify(existing.policy) === JSON.stringify(resolved)) return existing;
      throw new RangeError(
        `redlimit: a different policy named '${resolved.name}' is already registered`,
      );
    }
    const limiter = new Limiter(this.connection.store, policy, this.limiterOptions);
    this.limiters.set(resolved.name, limiter);
    return limiter;
  }

  /**
   * The limiter for a decorator's policy: a name, an inline definition (registered on first use),
   * or, when undefined, the module's `defaultPolicy`.
   */
  resolve(policy: string | PolicyOptions | undefined): Limiter {
    if (policy === undefined) {
      if (this.defaultPolicy === undefined) {
        throw new Error(
          'redlimit: no policy given and no defaultPolicy configured in RedlimitModule.forRoot()',
        );
      }
      return this.get(this.defaultPolicy);
    }
    if (typeof policy === 'string') return this.get(policy);
    let limiter = this.inline.get(policy);
    if (!limiter) {
      limiter = this.register(policy);
      this.inline.set(policy, limiter);
    }
    return limiter;
  }

  private logFailure(failure: StoreFailure, policy: string): void {
    const now = performance.now();
    if (now - (this.lastFailureLogAt.get(policy) ?? -Infinity) < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLogAt.set(policy, now);
    const outcome = {
      open: 'failing open: requests are allowed without limits',
      closed: 'failing closed: requests are refused with 503',
      memory: "limiting in this process's memory until it answers (per-process limits)",
    }[failure.failMode];
    this.logger.warn(
      `Store ${failure.reason} for policy '${policy}', ${outcome} (${failure.error.message})`,
    );
  }

  private logSettleError(error: unknown, decision: Decision): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.logger.warn(
      `Could not refund a spend of policy '${decision.policy}'; the cost was kept (${reason})`,
    );
  }
}
