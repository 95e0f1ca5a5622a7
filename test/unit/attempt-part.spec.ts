import { Attempt, Throttle } from '../../lib/nest';
import { parseFieldRef, resolveAttemptPart } from '../../lib/nest/attempt/attempt-part.util';

/** Applies @Attempt to a fresh handler's first parameter. */
function decorate(...args: Parameters<typeof Attempt>): void {
  class Controller {
    handler(_attempt: unknown): void {}
  }
  Attempt(...args)(Controller.prototype, 'handler', 0);
}

describe('@Attempt parts are checked when the decorator runs', () => {
  it('parses sources and nested paths', () => {
    expect(parseFieldRef('email')).toEqual({ text: 'email', path: ['email'] });
    expect(parseFieldRef('body.user.email')).toEqual({
      text: 'body.user.email',
      source: 'body',
      path: ['user', 'email'],
    });
    expect(parseFieldRef('headers.X-User')).toEqual({
      text: 'headers.X-User',
      source: 'headers',
      path: ['x-user'],
    });
    expect(resolveAttemptPart('params.email', 0)).toMatchObject({ kind: 'field', name: 'email' });
    expect(resolveAttemptPart({ field: 'body.user.login', name: 'email' }, 0)).toMatchObject({
      kind: 'field',
      name: 'email',
      normalize: true,
    });
    expect(resolveAttemptPart('ip', 0)).toEqual({ kind: 'ip', name: 'ip' });
  });

  it.each<[string, unknown, RegExp]>([
    [
      'an unknown source',
      'bdy.email',
      /parts\[0\]: field "bdy\.email" starts with 'bdy', which is not a source; expected body, query, params, headers, args, data/,
    ],
    [
      'an empty path segment',
      'body..email',
      /parts\[0\]: field "body\.\.email" needs property names/,
    ],
    [
      'a prototype segment',
      'body.__proto__.x',
      /parts\[0\]: field "body\.__proto__\.x" needs property names/,
    ],
    ['a bad header name', 'headers.x user', /does not name an HTTP header/],
    ['surrounding spaces', ' email', /non-empty name without surrounding spaces/],
    [
      'an unknown spec option',
      { field: 'body.email', normalise: false },
      /parts\[0\] has unknown option 'normalise'; expected field or value/,
    ],
    [
      'both field and value',
      { field: 'email', value: () => 'x' },
      /exactly one of field .* and value/,
    ],
    [
      'a non-boolean normalize',
      { field: 'email', normalize: 'no' },
      /normalize must be true or false; got "no"/,
    ],
    [
      'a key name with a colon',
      { field: 'email', name: 'e:mail' },
      /name must be a non-empty key name without ':'/,
    ],
    ['a number', 42, /parts\[0\] must be 'ip', 'user', 'apiKey', a field/],
  ])('%s → TypeError naming the part', (_title, part, message) => {
    expect(() => decorate(part as string)).toThrow(TypeError);
    expect(() => decorate(part as string)).toThrow(message);
  });

  it.each([0, -1, 1.5, '3', null])('cost %p → TypeError, on @Attempt and @Throttle', (cost) => {
    expect(() => decorate('email', { cost } as never)).toThrow(
      /@Attempt\(\) cost must be a whole number of at least 1 or a function of the context/,
    );
    expect(() => Throttle('p', { cost } as never)).toThrow(
      /@Throttle\(\) cost must be a whole number of at least 1 or a function of the context/,
    );
  });

  it('a cost function is taken as it is (checked per call)', () => {
    expect(() => decorate('email', { cost: () => 3 })).not.toThrow();
    expect(() => Throttle('p', { cost: () => 3 })).not.toThrow();
  });

  it('unknown @Attempt options are errors', () => {
    expect(() => decorate('email', { polcy: 'login' } as never)).toThrow(
      /@Attempt\(\) has unknown option 'polcy'; expected policy, cost, refundOn/,
    );
  });
});
