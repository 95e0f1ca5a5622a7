import { createHash } from 'node:crypto';
import { Limiter } from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('keys');
const hashed = (key: string) => `#${createHash('sha256').update(key).digest('base64url')}`;

describe.each(stores)('$name store: distinct caller keys never share a budget', (backend) => {
  const make = () =>
    new Limiter(backend.store(new TestClock()), {
      name: 'keys',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
    });

  it.each([
    ['a key longer than 128 characters', 'x'.repeat(200)],
    ['a key with braces', 'email:{ada}'],
  ])('%s and the plain key spelling its stored hash', async (_, key) => {
    const limiter = make();
    expect((await limiter.consume(key)).allowed).toBe(true);
    expect((await limiter.consume(hashed(key))).allowed).toBe(true);
    expect((await limiter.consume(key)).allowed).toBe(false);
  });

  it('a key that starts with # is its own key', async () => {
    const limiter = make();
    expect((await limiter.consume('#a')).allowed).toBe(true);
    expect((await limiter.consume('#b')).allowed).toBe(true);
    expect((await limiter.consume('#a')).allowed).toBe(false);
  });

  it.each([
    ['a lone high surrogate', 'u\uD800'],
    ['a lone low surrogate', 'u\uDC00'],
    ['a reversed pair', 'u\uDC00\uD800'],
  ])('refuses %s with a TypeError naming the key, before the store', async (_, key) => {
    const limiter = make();
    await expect(limiter.consume(['ok', key])).rejects.toThrow(
      /keys\[1\] must be well-formed UTF-16/,
    );
    await expect(limiter.peek(key)).rejects.toThrow(TypeError);
    await expect(limiter.reset(key)).rejects.toThrow(TypeError);
    expect((await limiter.consume('ok')).allowed).toBe(true); // nothing was spent
  });

  it('a well-formed surrogate pair is an ordinary key', async () => {
    const limiter = make();
    expect((await limiter.consume('u\uD83D\uDE00')).allowed).toBe(true);
    expect((await limiter.consume('u\uFFFD')).allowed).toBe(true);
    expect((await limiter.consume('u\uD83D\uDE00')).allowed).toBe(false);
  });
});
