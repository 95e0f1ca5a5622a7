import {
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
  Optional,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Decision, StoreFailure } from '../../core/decision';
import { Limiter, type LimiterOptions } from '../../core/limiter';
import { type PolicyOptions, resolvePolicy } from '../../core/policy';
import { REDLIMIT_LOGGER_CONTEXT, REDLIMIT_OPTIONS } from '../module/redlimit.constants';
import { RedlimitConnection } from '../module/redlimit-connection.service';
import type { PolicyRef, PolicyResolverService } from '../throttle/redlimit.metadata';
import { RedlimitEvents } from '../module/redlimit-events.service';
import type { RedlimitModuleOptions } from '../../config/redlimit-options.interface';
import { warnEvery } from '../../core/warn-every.util';
import type { OverrideHistoryEntry, PolicyChange, PolicyOverride } from '../../core/overrides';
import {
  type ClearOverrideOptions,
  type OverrideOptions,
  PolicyOverrides,
} from '../../core/policy-overrides';

/** A warning given at most once every 10 s ({@link warnEvery}). */
type Warning = ReturnType<typeof warnEvery>;

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
export class LimiterRegistry implements OnModuleInit, OnModuleDestroy {
  /**
   * Live limits of the module's store (undefined for a custom store without `overrides()`): the
   * overrides every limiter of the registry runs under. See {@link override}.
   */
  readonly liveLimits: PolicyOverrides | undefined;
  /** Whether the startup read is done (changes after it are logged as they come). */
  private started = false;
  private readonly limiters = new Map<string, Limiter>();
  /** Inline decorator policies by identity: validated once, not on every request. */
  private readonly inline = new WeakMap<PolicyOptions, Limiter>();
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  /** Per policy: its store failures, logged at most once every 10 s. */
  private readonly failureWarnings = new Map<string, Warning>();
  /** Per policy in shadow mode: the refusals it let through, logged at most once every 10 s. */
  private readonly shadowWarnings = new Map<string, Warning>();
  /** The module's `shadow`: every policy that does not set its own is in shadow mode. */
  private readonly shadow: boolean;
  private readonly limiterOptions: LimiterOptions;
  /** The module's `defaultPolicy`, if any. */
  readonly defaultPolicy: string | undefined;
  /** The module's `defaultPolicyScope`: budgets of the default layer per route, or app-wide. */
  readonly defaultPolicyScope: 'route' | 'app';

  constructor(
    private readonly connection: RedlimitConnection,
    @Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions,
    events: RedlimitEvents,
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {
    const { store } = connection;
    this.liveLimits =
      typeof store.overrides === 'function'
        ? new PolicyOverrides(store.overrides(), {
            ...(options.overridesPollMs !== undefined && { pollMs: options.overridesPollMs }),
            onWarning: (message) => this.logger.warn(message),
            onChange: (inForce, version) => {
              if (!this.started) return; // (the startup lists them once ready)
              this.logger.log(
                `redlimit: live limits at version ${version}: ` +
                  (inForce.length === 0
                    ? 'no override in force, every policy as configured'
                    : inForce.map(describeOverride).join('; ')),
              );
            },
          })
        : undefined;
    this.limiterOptions = {
      events,
      ...(this.liveLimits !== undefined && { overrides: this.liveLimits }),
      ...(options.failMode !== undefined && { failMode: options.failMode }),
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.failureRetryAfterMs !== undefined && {
        failureRetryAfterMs: options.failureRetryAfterMs,
      }),
      ...(options.receiptSecret !== undefined && { receiptSecret: options.receiptSecret }),
      onStoreFailure:
        options.onStoreFailure ?? ((failure, policy) => this.logFailure(failure, policy)),
      onSettleError: (error, decision) => this.logSettleError(error, decision),
      onShadowRefusal: (decision) => this.logShadowRefusal(decision),
    };
    if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
      throw new TypeError(
        `RedlimitModule shadow must be true or false; got ${JSON.stringify(options.shadow)}`,
      );
    }
    this.shadow = options.shadow === true;
    for (const [name, definition] of Object.entries(options.policies ?? {})) {
      this.register({ ...definition, name });
    }
    this.defaultPolicy = options.defaultPolicy;
    const scope = options.defaultPolicyScope ?? 'route';
    if (scope !== 'route' && scope !== 'app') {
      throw new RangeError(
        `RedlimitModule defaultPolicyScope must be 'route' or 'app'; got ${JSON.stringify(scope)}`,
      );
    }
    this.defaultPolicyScope = scope;
    if (this.defaultPolicy !== undefined) this.get(this.defaultPolicy);
  }

  /**
   * Reads the overrides in force (logging each), then polls for changes. A store that does not
   * answer delays nothing: the limits are the configured ones until it does.
   */
  async onModuleInit(): Promise<void> {
    const live = this.liveLimits;
    if (live === undefined) return;
    try {
      await live.start();
    } catch (error) {
      this.logger.warn(
        `redlimit: could not read live policy overrides at startup (${(error as Error).message}); the configured limits apply until they can be read`,
      );
    }
    for (const override of live.inForceNow()) {
      this.logger.log(`redlimit: live override in force: ${describeOverride(override)}`);
    }
    this.started = true;
  }

  /** Stops polling for overrides. */
  onModuleDestroy(): void {
    this.liveLimits?.stop();
  }

  /**
   * Changes a policy for the whole fleet, now and without a deploy: stored in the store
   * (validated first, exactly as a policy is, so a bad one is refused with the same messages and
   * nothing is stored), in force on every instance within `overridesPollMs`, for every key or for
   * keys starting with `options.scope` (a tenant), optionally from / until an instant. Recorded in
   * the history with who and why.
   *
   * @example
   * await registry.override('api', { limit: 5000 }, { scope: 'tenant:acme:', until: Date.now() + 3_600_000, reason: 'launch day', actor: 'ada' });
   * @throws TypeError / RangeError naming what is wrong, before the store is touched; Error for
   *   an unknown policy or a store without live limits
   */
  async override(
    name: string,
    change: PolicyChange,
    options?: OverrideOptions,
  ): Promise<PolicyOverride> {
    const limiter = this.get(name);
    const live = this.liveOrThrow();
    if (change?.failMode === 'memory' && typeof limiter.store.fallback !== 'function') {
      throw new TypeError(
        "override failMode 'memory' needs a store with an in-process fallback (store.fallback())",
      );
    }
    return live.set(limiter.policy, change, options);
  }

  /** Removes the override of a policy for a scope (default: the one for every key); resolves whether there was one. */
  async clearOverride(name: string, options?: ClearOverrideOptions): Promise<boolean> {
    this.get(name);
    return this.liveOrThrow().clear(name, options);
  }

  /** The overrides stored now, in force or not, read from the store. */
  async listOverrides(): Promise<readonly PolicyOverride[]> {
    return this.liveOrThrow().list();
  }

  /** The latest changes to the overrides (default 100), newest first. */
  async overrideHistory(count?: number): Promise<OverrideHistoryEntry[]> {
    return this.liveOrThrow().history(count);
  }

  private liveOrThrow(): PolicyOverrides {
    if (this.liveLimits === undefined) {
      throw new Error(
        'redlimit: this store keeps no live limits (it has no overrides()); RedisStore and MemoryStore do',
      );
    }
    return this.liveLimits;
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
  register(definition: PolicyOptions): Limiter {
    // The module's shadow mode covers every policy that does not say otherwise.
    const policy =
      this.shadow && definition?.shadow === undefined
        ? { ...definition, shadow: true }
        : definition;
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

  /**
   * Like {@link resolve}, and also runs a policy resolver for the call: a function
   * `(ctx) => name`, or a {@link PolicyResolverService} provider class (taken from the app's
   * injector). A resolver that throws, returns something other than a string, or names no
   * registered policy fails the call with an error saying so: a server error, never a silent pass.
   * @internal
   */
  async resolveFor(policy: PolicyRef | undefined, context: ExecutionContext): Promise<Limiter> {
    if (typeof policy !== 'function') return this.resolve(policy);
    let name: unknown;
    if (isResolverClass(policy)) {
      let service: PolicyResolverService;
      try {
        service = this.moduleRef!.get(policy, { strict: false });
      } catch {
        throw new Error(
          `redlimit: the policy resolver ${policy.name} is not a provider; add it to the providers of a module`,
        );
      }
      name = await service.resolvePolicy(context);
    } else {
      name = await (policy as (context: ExecutionContext) => unknown)(context);
    }
    if (typeof name !== 'string' || !this.limiters.has(name)) {
      const known = [...this.limiters.keys()].map((n) => `'${n}'`).join(', ');
      throw new Error(
        `redlimit: the policy resolver ${policy.name ? `${policy.name} ` : ''}returned ` +
          `${typeof name === 'string' ? `'${name}'` : String(name)}, which is not a registered policy` +
          (known ? `; known policies: ${known}` : ''),
      );
    }
    return this.get(name);
  }

  private logFailure(failure: StoreFailure, policy: string): void {
    this.warningOf(this.failureWarnings, policy)(() => this.failureMessage(failure, policy));
  }

  private failureMessage(failure: StoreFailure, policy: string): string {
    const shadow = this.limiters.get(policy)?.policy.shadow ?? this.shadow;
    const outcome =
      shadow && failure.failMode === 'closed'
        ? 'in shadow mode: requests are allowed (shadow refuses nothing; enforced, it would fail closed)'
        : {
            open: 'failing open: requests are allowed without limits',
            closed: 'failing closed: requests are refused with 503',
            memory:
              "limiting in this process's memory until it answers (this process's share of the limit)",
          }[failure.failMode];
    return `Store ${failure.reason} for policy '${policy}', ${outcome} (${failure.error.message})`;
  }

  /** A policy in shadow mode let a refusal through: one log line per policy every 10 s at most. */
  private logShadowRefusal(decision: Decision): void {
    this.warningOf(
      this.shadowWarnings,
      decision.policy,
    )(
      (count) =>
        `Policy '${decision.policy}' is in shadow mode: let through ${count} refusal${count === 1 ? '' : 's'} since its last report`,
    );
  }

  /** The policy's warning in `warnings`, made on its first use. */
  private warningOf(warnings: Map<string, Warning>, policy: string): Warning {
    let warn = warnings.get(policy);
    if (warn === undefined) {
      warn = warnEvery((message) => this.logger.warn(message));
      warnings.set(policy, warn);
    }
    return warn;
  }

  private logSettleError(error: unknown, decision: Decision): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.logger.warn(
      `Could not refund a spend of policy '${decision.policy}'; the cost was kept (${reason})`,
    );
  }
}

/** Whether a function is a resolver provider class (it has `resolvePolicy` on its prototype). */
function isResolverClass(fn: unknown): fn is Type<PolicyResolverService> {
  const prototype = (fn as { prototype?: { resolvePolicy?: unknown } }).prototype;
  return typeof prototype?.resolvePolicy === 'function';
}

/** One override in a line: policy, scope, change, window of time, version, who and why. */
export function describeOverride(override: PolicyOverride): string {
  try {
    return describeOnce(override);
  } catch {
    return `${override.policy} (version ${override.version}): a change that cannot be shown`;
  }
}

function describeOnce(override: PolicyOverride): string {
  const when = [
    override.from !== undefined ? `from ${new Date(override.from).toISOString()}` : '',
    override.until !== undefined ? `until ${new Date(override.until).toISOString()}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return (
    `${override.policy} ${override.scope === '' ? 'for every key' : `for keys starting ${JSON.stringify(override.scope)}`}: ` +
    `${JSON.stringify(override.change)}${when ? ` ${when}` : ''} (version ${override.version}, by ${override.actor}` +
    `${override.reason !== undefined ? `: ${override.reason}` : ''})`
  );
}
