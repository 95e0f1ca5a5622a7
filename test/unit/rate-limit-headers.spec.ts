import { type Decision, type ResolvedPolicy } from '../../lib/nest';
import { rateLimitHeaders, writeRateLimitHeaders } from '../../lib/http/rate-limit-headers.util';
import { resolvePolicy } from '../../lib/core/policy';

const decision = (fields: Partial<Decision>): Decision =>
  ({
    allowed: true,
    remaining: 3,
    limit: 10,
    windowMs: 900_000,
    retryAfterMs: 0,
    resetAfterMs: 411_200,
    policy: 'login',
    ...fields,
  }) as Decision;

describe('rate-limit headers', () => {
  const policy = resolvePolicy({
    name: 'login',
    algorithm: 'fixed-window',
    limit: 10,
    window: '15m',
    limits: [{ limit: 20, window: '1h' }],
  });

  it.each(['ietf', 'legacy', 'both'] as const)(
    'writeRateLimitHeaders writes what rateLimitHeaders returns, in order (%s)',
    (style) => {
      for (const d of [decision({}), decision({ limit: 20, windowMs: 3_600_000, remaining: 0 })]) {
        const written: Array<[string, string]> = [];
        writeRateLimitHeaders(d, policy, style, (name, value) => written.push([name, value]));
        expect(written).toEqual(Object.entries(rateLimitHeaders(d, policy, style)));
      }
    },
  );

  it('names the binding limit, the same on every call of a policy', () => {
    const hourly = decision({ limit: 20, windowMs: 3_600_000, remaining: 1 });
    for (let i = 0; i < 2; i++) {
      expect(rateLimitHeaders(hourly, policy, 'ietf')).toEqual({
        'RateLimit-Policy': '"login";q=10;w=900, "login.1";q=20;w=3600',
        RateLimit: '"login.1";r=1;t=412',
      });
    }
  });

  it('a policy built by hand and changed between calls gets the headers of what it is now', () => {
    const mutable: { name: string; limits: Array<{ limit: number; windowMs: number }> } = {
      name: 'hand',
      limits: [{ limit: 5, windowMs: 60_000 }],
    };
    const d = decision({ limit: 5, windowMs: 60_000 });
    const asPolicy = mutable as unknown as ResolvedPolicy;
    expect(rateLimitHeaders(d, asPolicy, 'ietf')['RateLimit-Policy']).toBe('"hand";q=5;w=60');
    mutable.name = 'renamed';
    mutable.limits[0]!.limit = 6;
    expect(rateLimitHeaders(d, asPolicy, 'ietf')['RateLimit-Policy']).toBe('"renamed";q=6;w=60');
  });
});
