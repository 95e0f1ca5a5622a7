import { fullJitterDelayMs } from '../../../lib/client/backoff.util';
import { parseRateLimitWait, parseRetryAfter } from '../../../lib/client/retry-after.util';
import { responseOfError } from '../../../lib/client/with-retry-after';
import { readHeader, serverWait } from '../../../lib/client/retry-after.util';
import { EPOCH_MS } from './fake-clock';

describe('parseRetryAfter', () => {
  it('reads delta-seconds as ms', () => {
    expect(parseRetryAfter('0', EPOCH_MS)).toBe(0);
    expect(parseRetryAfter('2', EPOCH_MS)).toBe(2000);
    expect(parseRetryAfter(' 120 ', EPOCH_MS)).toBe(120_000);
  });

  it('reads the three HTTP-date formats as ms from now, a past date as 0', () => {
    const now = Date.parse('1994-11-06T08:49:30Z');
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Sun Nov  6 08:49:37 1994', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:00 GMT', now)).toBe(0);
  });

  it.each(['', 'soon', '-1', '1.5', '2 GMT', '2025-03-01T12:00:05Z', 'Sun, 06 Nov 1994'])(
    'is undefined for %j (so a malformed header falls back to backoff)',
    (value) => {
      expect(parseRetryAfter(value, EPOCH_MS)).toBeUndefined();
    },
  );
});

describe('parseRateLimitWait', () => {
  it("takes t of the exhausted item, as redlimit's own 429 sends it", () => {
    expect(parseRateLimitWait('"two";r=0;t=12')).toBe(12_000);
  });

  it('takes the longest t among exhausted items and ignores items with quota left', () => {
    expect(parseRateLimitWait('"burst";r=0;t=3, "daily";r=0;t=60, "api";r=9;t=600')).toBe(60_000);
    expect(parseRateLimitWait('"a,b";r=0;t=5')).toBe(5000);
  });

  it('is undefined when quota remains or the header does not parse', () => {
    expect(parseRateLimitWait('"api";r=4;t=30')).toBeUndefined();
    expect(parseRateLimitWait('"api";r=0')).toBeUndefined();
    expect(parseRateLimitWait('"api";r=0;t=soon')).toBeUndefined();
    expect(parseRateLimitWait('garbage')).toBeUndefined();
  });
});

describe('serverWait', () => {
  it('prefers Retry-After, then RateLimit t, else undefined', () => {
    const both = { 'Retry-After': '4', RateLimit: '"x";r=0;t=9' };
    expect(serverWait({ status: 429, headers: both }, EPOCH_MS)).toEqual({
      delayMs: 4000,
      source: 'retry-after',
    });
    const onlyRateLimit = new Headers({ RateLimit: '"x";r=0;t=9' });
    expect(serverWait({ status: 429, headers: onlyRateLimit }, EPOCH_MS)).toEqual({
      delayMs: 9000,
      source: 'ratelimit',
    });
    const malformed = { 'retry-after': 'later', ratelimit: '"x";r=0;t=9' };
    expect(serverWait({ status: 503, headers: malformed }, EPOCH_MS)?.source).toBe('ratelimit');
    expect(serverWait({ status: 503, headers: {} }, EPOCH_MS)).toBeUndefined();
  });

  it('reads fetch Headers, plain objects in any case, lists and numbers', () => {
    expect(readHeader(new Headers({ 'Retry-After': '3' }), 'retry-after')).toBe('3');
    expect(readHeader({ 'RETRY-AFTER': ['3', '4'] }, 'retry-after')).toBe('3');
    expect(readHeader({ 'retry-after': 3 }, 'Retry-After')).toBe('3');
    expect(readHeader({}, 'retry-after')).toBeUndefined();
  });
});

describe('fullJitterDelayMs', () => {
  it('is random in [0, min(max, base·2^n)]', () => {
    expect(fullJitterDelayMs(0, 200, 10_000, () => 0)).toBe(0);
    expect(fullJitterDelayMs(0, 200, 10_000, () => 0.5)).toBe(100);
    expect(fullJitterDelayMs(3, 200, 10_000, () => 0.999_999)).toBe(1599);
    expect(fullJitterDelayMs(10, 200, 10_000, () => 0.5)).toBe(5000); // capped by maxDelayMs
    expect(fullJitterDelayMs(10, 200, 10_000, () => 0.5, 3000)).toBe(1500); // and by limitMs
  });
});

describe('responseOfError', () => {
  it('finds error.response by shape (axios, ky) and nothing else', () => {
    const response = { status: 429, headers: { 'retry-after': '1' } };
    expect(responseOfError(Object.assign(new Error('429'), { response }))).toBe(response);
    expect(responseOfError(new Error('ECONNREFUSED'))).toBeUndefined();
    expect(responseOfError({ response: { status: '429', headers: {} } })).toBeUndefined();
    expect(responseOfError(null)).toBeUndefined();
  });
});
