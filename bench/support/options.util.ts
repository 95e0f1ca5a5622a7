/**
 * Command-line options of the bench scripts: `--name value`, `--name=value`, and `--flag` for
 * booleans. Defaults give the type of each option; an unknown option or a bad value throws.
 */
export type OptionValue = number | string | boolean;

export function parseOptions<T extends Record<string, OptionValue>>(
  argv: readonly string[],
  defaults: T,
  usage: string,
): T {
  const options: Record<string, OptionValue> = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      console.log(usage);
      process.exit(0);
    }
    const match = /^--([a-z][a-z-]*)(?:=(.*))?$/.exec(arg);
    const name = match?.[1];
    if (!name || !(name in defaults)) throw new RangeError(`unknown option ${arg}\n${usage}`);
    const fallback = defaults[name];
    if (typeof fallback === 'boolean' && match[2] === undefined) {
      options[name] = true;
      continue;
    }
    const raw = match[2] ?? argv[++i];
    if (raw === undefined) throw new RangeError(`option --${name} needs a value\n${usage}`);
    if (typeof fallback === 'number') {
      const value = Number(raw.replace(/_/g, ''));
      if (!Number.isFinite(value) || value <= 0) {
        throw new RangeError(`--${name} must be a positive number; got ${raw}`);
      }
      options[name] = value;
    } else if (typeof fallback === 'boolean') {
      options[name] = raw !== 'false' && raw !== '0';
    } else {
      options[name] = raw;
    }
  }
  return options as T;
}
