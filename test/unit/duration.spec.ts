import { parseDuration } from '../../lib';

describe('parseDuration', () => {
  it.each<[number | string, number]>([
    [1, 1],
    [1500, 1500],
    ['500ms', 500],
    ['30s', 30_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['1.5h', 5_400_000],
    ['2d', 172_800_000],
  ])('%p → %p ms', (input, ms) => {
    expect(parseDuration(input, 'window')).toBe(ms);
  });

  it.each(['', '15', '15 minutes', '-1m', '1.0005s', 'soon', '0s'])(
    'rejects %p naming the argument',
    (input) => {
      expect(() => parseDuration(input, 'window')).toThrow(RangeError);
      expect(() => parseDuration(input, 'window')).toThrow(/^window/);
    },
  );

  it.each([0, -5, 0.5, NaN, Infinity])('rejects the number %p', (input) => {
    expect(() => parseDuration(input, 'window')).toThrow(RangeError);
  });
});
