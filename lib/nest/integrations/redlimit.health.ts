import { Injectable, Logger } from '@nestjs/common';
import { Limiter } from '../../core/limiter';
import type { Algorithm } from '../../core/policy';
import { LimiterRegistry } from '../registry/limiter.registry';
import { RedlimitConnection } from '../module/redlimit-connection.service';
import { REDLIMIT_LOGGER_CONTEXT } from '../module/redlimit.constants';
import { warnEvery } from '../../core/warn-every.util';

/** Options of {@link RedlimitHealthIndicator.isHealthy}. */
export interface RedlimitHealthOptions {
  /** Longest wait for the store, in ms: past it the check reports `down`. Default 1000. */
  readonly timeoutMs?: number;
}

/**
 * What the check found, under its key in a {@link RedlimitHealthResult}: the shape Terminus
 * expects of an indicator (`status` plus details), so it appears as is in `info` or `error`.
 */
export type RedlimitHealthDetails = {
  /** `up`: the store answered and ran the scripts of every algorithm in use; `down` otherwise. */
  readonly status: 'up' | 'down';
  /** The module's store: `'redis'`, `'memory'` (per process) or `'custom'`. */
  readonly store: RedlimitConnection['kind'];
  /** The algorithms whose scripts were run (read-only) for the check. */
  readonly algorithms: readonly Algorithm[];
  /** The Redis client's state (`ready`, `reconnecting`, …), with the module's Redis store. */
  readonly connection?: string;
  /** `up`: how long the check took, in ms. */
  readonly latencyMs?: number;
  /**
   * `down`: why, in generic words (`<algorithm>: the store did not answer within <n> ms`, or
   * `<algorithm>: the store failed (the reason is in the log)`). The store's own error text, which
   * can name hosts, ports or commands, is never put here: it is logged (Nest `Logger`, context
   * `Redlimit`, at most once every 10 s).
   */
  readonly error?: string;
};

/** A health indicator result: the details under the key the check was given. */
export type RedlimitHealthResult<Key extends string = 'redlimit'> = Record<
  Key,
  RedlimitHealthDetails
>;

/** The caller key of the probe: read, never written. */
const PROBE_KEY = 'redlimit:health';
const PROBE_POLICY = 'redlimit-health';
const DEFAULT_TIMEOUT_MS = 1000;

/**
 * Health of the module's rate-limit store, for `@nestjs/terminus` (or any health endpoint):
 * `up` when the store answers and runs the Lua script of every algorithm the module's policies
 * use — a read-only `peek` on a probe key per algorithm, so nothing is written and a missing function
 * library is loaded as it would be for a request — within `timeoutMs`; `down` with a generic reason
 * otherwise (the store's error text is logged, never put in the output, which is often public).
 * It never waits longer than `timeoutMs`, so a stopped or hung Redis reports `down` quickly.
 *
 * It returns Terminus's result shape and does not import `@nestjs/terminus` (an optional peer):
 * list it in the `providers` of the module with your health controller, next to `TerminusModule`.
 *
 * @example
 * ```ts
 * @Controller('health')
 * export class HealthController {
 *   constructor(private readonly health: HealthCheckService, private readonly redlimit: RedlimitHealthIndicator) {}
 *
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.redlimit.isHealthy('redlimit')]);
 *   }
 * }
 *
 * @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [RedlimitHealthIndicator] })
 * export class HealthModule {}
 * ```
 */
@Injectable()
export class RedlimitHealthIndicator {
  private readonly logger = new Logger(REDLIMIT_LOGGER_CONTEXT);
  /** The detail of a failed check is logged at most once every 10 s. */
  private readonly warnDown = warnEvery((message) => this.logger.warn(message));

  constructor(
    private readonly connection: RedlimitConnection,
    private readonly registry: LimiterRegistry,
  ) {}

  /**
   * Checks the store and reports under `key` (default `'redlimit'`). Resolves with `status: 'down'`
   * rather than rejecting, as Terminus 11+ indicators do.
   *
   * @throws RangeError when `options.timeoutMs` is not a whole number ≥ 1 (before the store is used)
   */
  async isHealthy<Key extends string = 'redlimit'>(
    key: Key = 'redlimit' as Key,
    options: RedlimitHealthOptions = {},
  ): Promise<RedlimitHealthResult<Key>> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
      throw new RangeError(
        `RedlimitHealthIndicator timeoutMs must be a whole number of ms ≥ 1; got ${String(timeoutMs)}`,
      );
    }
    const algorithms = this.algorithms();
    const started = performance.now();
    const error = await this.probe(algorithms, timeoutMs);
    const base = {
      store: this.connection.kind,
      algorithms,
      // Read after the probe, which waits for a connection still being made.
      ...(this.connection.redisClient && { connection: this.connection.status }),
    };
    const details: RedlimitHealthDetails = error
      ? { status: 'down', ...base, error }
      : { status: 'up', ...base, latencyMs: Math.round(performance.now() - started) };
    return { [key]: details } as RedlimitHealthResult<Key>;
  }

  /** The algorithms of the registered policies (fixed-window when there are none). */
  private algorithms(): Algorithm[] {
    const used = new Set(
      this.registry.names.map((name) => this.registry.get(name).policy.algorithm),
    );
    return used.size > 0 ? [...used].sort() : ['fixed-window'];
  }

  /**
   * Peeks once per algorithm, in parallel; the first failure's generic reason (its detail logged),
   * or undefined.
   */
  private async probe(
    algorithms: readonly Algorithm[],
    timeoutMs: number,
  ): Promise<string | undefined> {
    const failures = await Promise.all(
      algorithms.map(async (algorithm): Promise<[string, string] | undefined> => {
        try {
          const limiter = new Limiter(
            this.connection.store,
            { name: PROBE_POLICY, algorithm, limit: 1, window: 1000 },
            // Closed and silent: a failure must read as down, not as an allowed decision or a log.
            { failMode: 'closed', timeoutMs, onStoreFailure: () => undefined },
          );
          const decision = await limiter.peek(PROBE_KEY);
          const failure = decision.failure;
          if (failure === undefined) return undefined;
          return failure.reason === 'timeout'
            ? [
                `${algorithm}: the store did not answer within ${timeoutMs} ms`,
                failure.error.message,
              ]
            : [`${algorithm}: the store failed (the reason is in the log)`, failure.error.message];
        } catch (error) {
          return [
            `${algorithm}: the store failed (the reason is in the log)`,
            error instanceof Error ? error.message : String(error),
          ];
        }
      }),
    );
    const first = failures.find((failure) => failure !== undefined);
    if (first === undefined) return undefined;
    this.warnDown(() => `RedlimitHealthIndicator: down, ${first[0].split(':')[0]}: ${first[1]}`);
    return first[0];
  }
}
