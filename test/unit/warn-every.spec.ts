import { WARNING_INTERVAL_MS, warnEvery } from '../../lib/core/warn-every.util';

describe('warnEvery', () => {
  it('warns once, then not again until the interval is over, counting the calls between', () => {
    let now = 1_000;
    const given: string[] = [];
    const warn = warnEvery(
      (message) => given.push(message),
      10_000,
      () => now,
    );
    warn((count) => `first ${count}`);
    now += 9_999;
    warn((count) => `second ${count}`);
    warn((count) => `third ${count}`);
    expect(given).toEqual(['first 1']);
    now += 1; // 10 s after the first warning
    warn((count) => `fourth ${count}`);
    expect(given).toEqual(['first 1', 'fourth 3']);
  });

  it('builds no message for a warning it does not give', () => {
    let now = 0;
    const warn = warnEvery(
      () => undefined,
      10_000,
      () => now,
    );
    const message = jest.fn(() => 'm');
    warn(message);
    now += 5_000;
    warn(message);
    expect(message).toHaveBeenCalledTimes(1);
  });

  it('warns at most once every 10 s by default (every repeated warning of redlimit uses it)', () => {
    expect(WARNING_INTERVAL_MS).toBe(10_000);
    let now = 0;
    const given: number[] = [];
    const warn = warnEvery(
      () => given.push(now),
      undefined,
      () => now,
    );
    warn(() => 'm');
    now = 9_999;
    warn(() => 'm');
    now = 10_000;
    warn(() => 'm');
    expect(given).toEqual([0, 10_000]);
  });
});
