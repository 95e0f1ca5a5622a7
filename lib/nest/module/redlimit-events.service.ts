import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { DecisionEvents } from '../../core/events';
import { openTelemetryMetrics } from '../../metrics/opentelemetry.metrics';
import { prometheusMetrics } from '../../metrics/prometheus.metrics';
import { checkUnknownOptions } from '../../core/options.util';
import { REDLIMIT_OPTIONS } from './redlimit.constants';
import type {
  RedlimitMetricsOptions,
  RedlimitModuleOptions,
} from '../../config/redlimit-options.interface';

/**
 * The module's {@link DecisionEvents}: every limiter of the {@link LimiterRegistry} reports its
 * consumes, peeks, refunds and store failures here. The module subscribes what its `metrics` and
 * `onDecision` options ask for; inject it to subscribe more, or to pass it to limiters of your own.
 * The module's own subscriptions end when the module is destroyed.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class RefusalAudit implements OnModuleInit {
 *   constructor(private readonly events: RedlimitEvents, private readonly audit: AuditLog) {}
 *
 *   onModuleInit() {
 *     this.events.on((e) => {
 *       if (e.outcome === 'refused') this.audit.write('rate-limited', e.policy, e.keyHashes);
 *     });
 *   }
 * }
 * ```
 */
@Injectable()
export class RedlimitEvents extends DecisionEvents implements OnModuleDestroy {
  private readonly subscriptions: Array<() => void> = [];

  constructor(@Inject(REDLIMIT_OPTIONS) options: RedlimitModuleOptions) {
    super();
    if (options.onDecision !== undefined) this.subscriptions.push(this.on(options.onDecision));
    const { prometheus, opentelemetry } = metricsTargets(options.metrics);
    // Fails the boot with a MissingPeerDependencyError when the package asked for is missing.
    if (prometheus) this.subscriptions.push(prometheusMetrics(this, prometheus));
    if (opentelemetry) this.subscriptions.push(openTelemetryMetrics(this, opentelemetry));
  }

  /** Ends the subscriptions made from the module options. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions.splice(0)) unsubscribe();
  }
}

type Targets = {
  prometheus?: Exclude<RedlimitMetricsOptions['prometheus'], boolean | undefined>;
  opentelemetry?: Exclude<RedlimitMetricsOptions['opentelemetry'], boolean | undefined>;
};

/** The `metrics` option, normalised: which backends, with which options. */
function metricsTargets(metrics: RedlimitModuleOptions['metrics']): Targets {
  if (metrics === undefined || metrics === false) return {};
  if (metrics === 'prometheus') return { prometheus: {} };
  if (metrics === 'opentelemetry') return { opentelemetry: {} };
  if (typeof metrics !== 'object' || metrics === null) {
    throw new TypeError(
      "RedlimitModule metrics must be 'prometheus', 'opentelemetry', false, or " +
        `{ prometheus?, opentelemetry? }; got ${JSON.stringify(metrics)}`,
    );
  }
  checkUnknownOptions(
    metrics,
    ['prometheus', 'opentelemetry'],
    'RedlimitModule metrics',
    "expected 'prometheus' and/or 'opentelemetry'",
  );
  const pick = <T extends object>(value: boolean | T | undefined, name: string): T | undefined => {
    if (value === undefined || value === false) return undefined;
    if (value === true) return {} as T;
    if (typeof value === 'object' && value !== null) return value;
    throw new TypeError(
      `RedlimitModule metrics.${name} must be true, false or an options object; ` +
        `got ${JSON.stringify(value)}`,
    );
  };
  const prometheus = pick(metrics.prometheus, 'prometheus');
  const opentelemetry = pick(metrics.opentelemetry, 'opentelemetry');
  return { ...(prometheus && { prometheus }), ...(opentelemetry && { opentelemetry }) };
}
