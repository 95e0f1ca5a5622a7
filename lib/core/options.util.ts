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
  const has = isSet(known)
    ? (name: string) => known.has(name)
    : (name: string) => known.includes(name);
  for (const name of Object.keys(value)) {
    if (!has(name)) throw new TypeError(message(name, [...known].join(', ')));
  }
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
