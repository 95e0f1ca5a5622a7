/** Why a request's identity value was refused. */
export type IdentityInputProblem = 'not-scalar' | 'conflict' | 'no-client-address' | 'not-a-cost';

/**
 * A request whose identity value cannot be used for a rate-limit key, found before anything is
 * charged and before the handler runs: a value that is not a string or a finite number (an array,
 * an object, a boolean, `null`), a bare field sent in several places with different values, or a
 * client address that cannot be read (`part` `'ip'`: no peer address, or a trusted proxy named
 * no one), or a cost computed from the request (`cost` function) that is not a whole number from 1
 * to the policy's smallest limit (`part` `'cost'`).
 * Over HTTP it becomes a 400 whose body names the part (and the sources); in a GraphQL resolver
 * it is thrown as is (`extensions.code` `BAD_USER_INPUT`); in a gateway or a microservice handler
 * a `WsException` / `RpcException` with the same fields.
 *
 * @example
 * try { contextField(context, 'email'); }
 * catch (error) { if (error instanceof IdentityInputError) console.log(error.part, error.sources); }
 */
export class IdentityInputError extends Error {
  /** Always `'IdentityInputError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'IdentityInputError';
  /** For GraphQL: copied into the error's `extensions`. */
  readonly extensions: {
    /** Always `'BAD_USER_INPUT'`, as GraphQL servers name a bad argument. */
    readonly code: 'BAD_USER_INPUT';
    /** Same as {@link IdentityInputError.part}. */
    readonly part: string;
    /** Same as {@link IdentityInputError.sources}: set for a conflicting bare field only. */
    readonly sources?: readonly string[];
  };

  constructor(
    /** The part as written in `@Attempt` (or the name given to `contextField`). */
    readonly part: string,
    /** What was wrong. */
    readonly problem: IdentityInputProblem,
    /** Where a conflicting bare field was found (`['body', 'params']`). */
    readonly sources?: readonly string[],
  ) {
    super(
      problem === 'conflict'
        ? `${part} is sent in ${(sources ?? []).join(' and ')} with different values; send it once`
        : problem === 'no-client-address'
          ? "the client's address could not be determined, so the request cannot be rate-limited"
          : problem === 'not-a-cost'
            ? `${part} must be a whole number from 1 to the policy's smallest limit`
            : `${part} must be a string or a number`,
    );
    this.extensions = { code: 'BAD_USER_INPUT', part, ...(sources && { sources }) };
  }
}
