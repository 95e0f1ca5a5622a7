import type { Decision } from '../core/decision';
import type { ResolvedPolicy } from '../core/policy';
import type { RateLimitHeaderStyle } from './redlimit-options.interface';

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
  if (style === false || decision.failure) return {};
  const headers: Record<string, string> = {};
  // A layer of a refused stack that fitted has no wait of its own: it reports its reset time.
  const resetSeconds =
    decision.allowed || decision.retryAfterMs === 0
      ? Math.ceil(decision.resetAfterMs / 1000)
      : retryAfterSeconds(decision.retryAfterMs);
  if (style === 'ietf' || style === 'both') {
    const itemName = (index: number): string =>
      sfString(index === 0 ? policy.name : `${policy.name}.${index}`);
    headers['RateLimit-Policy'] = policy.limits
      .map((rule, i) => `${itemName(i)};q=${rule.limit};w=${Math.ceil(rule.windowMs / 1000)}`)
      .join(', ');
    const binding = policy.limits.findIndex(
      (rule) => rule.limit === decision.limit && rule.windowMs === decision.windowMs,
    );
    headers.RateLimit = `${itemName(Math.max(0, binding))};r=${decision.remaining};t=${resetSeconds}`;
  }
  if (style === 'legacy' || style === 'both') {
    headers['X-RateLimit-Limit'] = String(decision.limit);
    headers['X-RateLimit-Remaining'] = String(decision.remaining);
    headers['X-RateLimit-Reset'] = String(resetSeconds);
  }
  return headers;
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
