/**
 * The one check of option names, shared by every options object redlimit takes (stores, limiters,
 * per-call options, stack parts, waiting): options that are not a plain object, or that name an
 * option the callee does not know (a typo such as `costs` or `failmode`), are a TypeError naming
 * it. An unknown option is never silently ignored: it would quietly change a limit.
 *
 * @param options what the caller passed; `undefined` is no options
 * @param known the option names the callee takes
 * @param where how messages name the options object: `consume() options`, `RedisStore options`
 * @throws TypeError naming the bad option and listing the known ones
 * @example
 * checkOptions({ costs: 8 }, ['cost'], 'consume() options');
 * // TypeError: consume() options.costs is not an option (known: cost)
 */
export function checkOptions(options: unknown, known: readonly string[], where: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `${where} must be an object { ${known.map((name) => `${name}?`).join(', ')} }; got ${describe(options)}`,
    );
  }
  checkKnownNames(
    options,
    known,
    (name, list) => `${where}.${name} is not an option (known: ${list})`,
  );
}

/**
 * The one check under every validator of core and stores ({@link checkOptions}, and the fields of a
 * policy, its limits and its lockout): an own key of `value` that is not in `known` is a TypeError,
 * with the message the validator words (given the name and the known names, comma-separated).
 *
 * @throws TypeError for the first unknown name
 * @example
 * checkKnownNames({ windw: '1m' }, ['limit', 'window'], (name, list) => `'${name}' is not a field (known: ${list})`);
 * // TypeError: 'windw' is not a field (known: limit, window)
 */
export function checkKnownNames(
  value: object,
  known: readonly string[] | ReadonlySet<string>,
  message: (name: string, known: string) => string,
): void {
  const [name] = unknownNames(value, known);
  if (name !== undefined) throw new TypeError(message(name, [...known].join(', ')));
}

/**
 * {@link checkKnownNames} naming every unknown option at once, as the Nest layer's options are
 * checked: `<where> has unknown option 'a', 'b'; <expected>`.
 *
 * @param where how the message names the options: `@Attempt()`, `RedlimitModule metrics`
 * @param expected what the message says is expected: `expected policy, cost`
 * @throws TypeError naming every unknown option
 * @example
 * checkUnknownOptions({ polcy: 'x' }, ['policy'], '@Attempt()', 'expected policy');
 * // TypeError: @Attempt() has unknown option 'polcy'; expected policy
 */
export function checkUnknownOptions(
  value: object,
  known: readonly string[] | ReadonlySet<string>,
  where: string,
  expected: string,
): void {
  const unknown = unknownNames(value, known);
  if (unknown.length > 0) {
    throw new TypeError(
      `${where} has unknown option ${unknown.map((name) => `'${name}'`).join(', ')}; ${expected}`,
    );
  }
}

/** The own keys of `value` that are not in `known`, in key order. */
function unknownNames(value: object, known: readonly string[] | ReadonlySet<string>): string[] {
  const has = isSet(known)
    ? (name: string) => known.has(name)
    : (name: string) => known.includes(name);
  return Object.keys(value).filter((name) => !has(name));
}

function isSet(known: readonly string[] | ReadonlySet<string>): known is ReadonlySet<string> {
  return known instanceof Set;
}

/**
 * Refuses arguments past those a method takes (`refund(decision, { cost: 2 })` would otherwise
 * refund the whole spend, silently).
 *
 * @throws TypeError naming the method and what it takes
 */
export function checkArgumentCount(count: number, takes: number, what: string): void {
  if (count > takes) throw new TypeError(`${what}; got ${count}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}
