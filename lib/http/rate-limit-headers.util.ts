import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import type { RateLimitHeaderStyle } from './http-options.types';

/**
 * Whole seconds to wait before retrying: rounded up, and never 0 (a `Retry-After: 0` invites an
 * immediate retry that would be refused again).
 *
 * @example
 * retryAfterSeconds(1); // 1
 * retryAfterSeconds(412_001); // 413
 */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/**
 * The rate-limit headers of a decision in a header style. `RateLimit-Policy` lists every limit of
 * the policy (the first is named after the policy, further ones `name.1`, `name.2`, … as in the
 * stored keys); `RateLimit` describes the binding one (least remaining, or the one that refused),
 * with `t` equal to `Retry-After` on a refusal and the time to full budget otherwise. Decisions
 * made without the store (fail mode) get no headers: their numbers mean nothing.
 *
 * @example
 * rateLimitHeaders(decision, limiter.policy, 'ietf');
 * // { 'RateLimit-Policy': '"login";q=10;w=900', RateLimit: '"login";r=3;t=412' }
 */
export function rateLimitHeaders(
  decision: Decision,
  policy: ResolvedPolicy,
  style: RateLimitHeaderStyle,
): Record<string, string> {
  const headers: Record<string, string> = {};
  writeRateLimitHeaders(decision, policy, style, (name, value) => {
    headers[name] = value;
  });
  return headers;
}

/**
 * Hands the headers of {@link rateLimitHeaders} to `set`, in the same order, without building a
 * record: what a response gets on every decision.
 *
 * @example
 * writeRateLimitHeaders(decision, limiter.policy, 'ietf', (name, value) => reply.header(name, value));
 */
export function writeRateLimitHeaders(
  decision: Decision,
  policy: ResolvedPolicy,
  style: RateLimitHeaderStyle,
  set: (name: string, value: string) => void,
): void {
  if (style === false || decision.failure) return;
  // A layer of a refused stack that fitted has no wait of its own: it reports its reset time.
  const resetSeconds =
    decision.allowed || decision.retryAfterMs === 0
      ? Math.ceil(decision.resetAfterMs / 1000)
      : retryAfterSeconds(decision.retryAfterMs);
  if (style === 'ietf' || style === 'both') {
    const fields = policyFields(policy);
    set('RateLimit-Policy', fields.policy);
    const { limits } = policy;
    let binding = 0;
    for (let i = 0; i < limits.length; i++) {
      const rule = limits[i]!;
      if (rule.limit === decision.limit && rule.windowMs === decision.windowMs) {
        binding = i;
        break;
      }
    }
    set(
      'RateLimit',
      `${fields.items[binding] ?? sfString(policy.name)};r=${decision.remaining};t=${resetSeconds}`,
    );
  }
  if (style === 'legacy' || style === 'both') {
    set('X-RateLimit-Limit', String(decision.limit));
    set('X-RateLimit-Remaining', String(decision.remaining));
    set('X-RateLimit-Reset', String(resetSeconds));
  }
}

/** What a policy's IETF headers hold whatever the decision. */
interface PolicyFields {
  /** The `RateLimit-Policy` value. */
  readonly policy: string;
  /** The item name of each limit: `"login"`, `"login.1"`, … */
  readonly items: readonly string[];
}

/** {@link PolicyFields} of resolved (frozen, so unchanging) policies. */
const fieldsByPolicy = new WeakMap<ResolvedPolicy, PolicyFields>();

function policyFields(policy: ResolvedPolicy): PolicyFields {
  let fields = fieldsByPolicy.get(policy);
  if (fields) return fields;
  const items = policy.limits.map((_, i) =>
    sfString(i === 0 ? policy.name : `${policy.name}.${i}`),
  );
  fields = {
    policy: policy.limits
      .map((rule, i) => `${items[i]};q=${rule.limit};w=${Math.ceil(rule.windowMs / 1000)}`)
      .join(', '),
    items,
  };
  // A policy built by hand could change after this call: only frozen ones are remembered.
  if (Object.isFrozen(policy) && Object.isFrozen(policy.limits)) fieldsByPolicy.set(policy, fields);
  return fields;
}

/**
 * The rate-limit headers of a stacked decision (several policies as one): IETF `RateLimit-Policy`
 * and `RateLimit` list every layer, in order; the legacy `X-RateLimit-*` headers, which hold one
 * limit, describe the layer at `shown` (the refusing one, or the one with the least left).
 *
 * @example
 * stackedRateLimitHeaders([{ decision: ip, policy: ipPolicy }, { decision: plan, policy: planPolicy }], 1, 'ietf');
 * // { 'RateLimit-Policy': '"ip";q=5;w=60, "plan-pro";q=4;w=60', RateLimit: '"ip";r=3;t=60, "plan-pro";r=1;t=60' }
 */
export function stackedRateLimitHeaders(
  layers: ReadonlyArray<{ readonly decision: Decision; readonly policy: ResolvedPolicy }>,
  shown: number,
  style: RateLimitHeaderStyle,
): Record<string, string> {
  const each = layers.map(({ decision, policy }) => rateLimitHeaders(decision, policy, style));
  const headers: Record<string, string> = { ...each[shown] };
  for (const name of ['RateLimit-Policy', 'RateLimit']) {
    const items = each.map((h) => h[name]).filter((v): v is string => v !== undefined);
    if (items.length > 0) headers[name] = items.join(', ');
  }
  return headers;
}

/** An RFC 8941 sf-string (policy names are letters, digits and `_.:-`, so nothing to escape). */
function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
