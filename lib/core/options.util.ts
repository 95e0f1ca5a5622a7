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
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) {
      throw new TypeError(`${where}.${name} is not an option (known: ${known.join(', ')})`);
    }
  }
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
