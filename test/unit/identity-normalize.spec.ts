import fc from 'fast-check';
import { attemptKey, normalizeIdentity } from '../../lib/nest';

describe('normalizeIdentity', () => {
  it.each([
    ['full-width letters', 'ＡＤＡ@ｅｘａｍｐｌｅ.com', 'ada@example.com'],
    ['a zero-width space', 'ada\u200b@example.com', 'ada@example.com'],
    ['zero-width joiner and non-joiner', 'a\u200dd\u200ca@example.com', 'ada@example.com'],
    ['a soft hyphen', 'a\u00adda@example.com', 'ada@example.com'],
    [
      'a byte-order mark and a variation selector',
      '\ufeffada\ufe0f@example.com',
      'ada@example.com',
    ],
    ['surrounding and no-break spaces', '\u00a0 Ada@Example.COM \u3000', 'ada@example.com'],
    ['a decomposed é', 'Jose\u0301@example.com', 'jos\u00e9@example.com'],
    ['a ligature', 'ﬁona@example.com', 'fiona@example.com'],
    ['nothing but ignorables', '\u200b\u00ad', ''],
  ])('%s', (_title, input, output) => {
    expect(normalizeIdentity(input)).toBe(output);
  });

  it('is idempotent on any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-composite', maxLength: 40 }), (text) => {
        const once = normalizeIdentity(text);
        expect(normalizeIdentity(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('attemptKey: look-alikes share a key unless normalize is false; empty after normalising is missing', () => {
    expect(attemptKey('email', 'ＡＤＡ@example.com')).toBe(attemptKey('email', 'ada@example.com'));
    expect(attemptKey('token', 'Tok', undefined, { normalize: false })).not.toBe(
      attemptKey('token', 'tok', undefined, { normalize: false }),
    );
    expect(attemptKey('email', '\u200b ')).toBe('email:-');
    expect(attemptKey('token', '', undefined, { normalize: false })).toBe('token:-');
  });
});
