/**
 * Metrics from decision events, with no hard dependency: Prometheus through prom-client and
 * OpenTelemetry through `@opentelemetry/api`, each loaded only when asked for.
 * @packageDocumentation
 */
export {
  DECISION_DURATION_BUCKETS_SECONDS,
  type DecisionMetricsRecorder,
  decisionMetricsListener,
} from './decision-metrics';
export { MissingPeerDependencyError } from './missing-peer.error';
export * from './opentelemetry.metrics';
export * from './prometheus.metrics';
