import type { ExecutionContext } from '@nestjs/common';
import { contextField } from '../../lib/nest';

/** Options are checked before the context is read. */
const context = {} as ExecutionContext;

describe('contextField options', () => {
  it.each([
    [{ normalize: false }, /contextField\(\) options\.normalize is not an option \(known: raw\)/],
    [{ raw: 'yes' }, /contextField\(\) options\.raw must be true or false; got yes/],
    [null, /contextField\(\) options must be an object \{ raw\? \}/],
  ])('%j is refused, naming it', (options, message) => {
    expect(() =>
      contextField(context, 'body.email', options as unknown as { raw?: boolean }),
    ).toThrow(message);
  });
});
