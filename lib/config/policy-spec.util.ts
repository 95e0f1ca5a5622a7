import { FAIL_MODES, type FailMode, type PolicyOptions, resolvePolicy } from '../core/policy';
import type { PolicyDefinition } from './redlimit-options.interface';

/**
 * Parses the compact policy syntax used in environment variables:
 *
 *     name=algorithm:limit/window[~burst][+limit/window[~burst]…][:failMode], …
 *
 * e.g. `login=fixed-window:10/15m,api=sliding-window:100/1m+2000/1h:open`. Items are separated
 * by commas (whitespace and newlines around them are ignored); windows are durations (`500ms`,
 * `30s`, `15m`, `1h`, `1d`); `~burst` sets the capacity of a `token-bucket` or `gcra` limit;
 * `failMode` is `closed`, `open` or `memory`. Every policy is validated.
 *
 * @throws RangeError saying which item is wrong and why
 * @example
 * parsePolicySpec('login=fixed-window:10/15m');
 * // { login: { algorithm: 'fixed-window', limit: 10, window: '15m' } }
 */
export function parsePolicySpec(spec: string): Record<string, PolicyDefinition> {
  const policies: Record<string, PolicyDefinition> = {};
  const items = spec
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new RangeError('no policies given');
  for (const item of items) {
    const { name, definition } = parseItem(item);
    if (Object.prototype.hasOwnProperty.call(policies, name)) {
      throw new RangeError(`policy '${name}' is defined twice`);
    }
    policies[name] = definition;
  }
  return policies;
}

const ITEM_SHAPE = 'name=algorithm:limit/window[~burst][+limit/window…][:closed|:open|:memory]';

function parseItem(item: string): { name: string; definition: PolicyDefinition } {
  const fail = (problem: string): never => {
    throw new RangeError(`'${item}': ${problem}; expected ${ITEM_SHAPE}`);
  };
  const eq = item.indexOf('=');
  if (eq < 1) fail('no policy name before =');
  const name = item.slice(0, eq).trim();
  const [algorithm = '', limitsText = '', failMode, ...extra] = item
    .slice(eq + 1)
    .split(':')
    .map((s) => s.trim());
  if (extra.length > 0) fail('too many : separators');
  if (algorithm === '' || limitsText === '') fail('algorithm and limits are required');
  if (failMode !== undefined && !FAIL_MODES.includes(failMode as FailMode)) {
    fail(`fail mode must be closed, open or memory, not '${failMode}'`);
  }
  const limits = limitsText.split('+').map((rule) => {
    const match = /^(\d+)\s*\/\s*([^~\s]+)(?:\s*~\s*(\d+))?$/.exec(rule.trim());
    if (!match) return fail(`'${rule}' is not limit/window[~burst] such as 10/15m`);
    return {
      limit: Number(match[1]),
      window: match[2] as string,
      ...(match[3] !== undefined && { burst: Number(match[3]) }),
    };
  });
  const [first, ...more] = limits;
  const definition: PolicyDefinition = {
    algorithm: algorithm as PolicyOptions['algorithm'],
    limit: first?.limit,
    window: first?.window,
    ...(first?.burst !== undefined && { burst: first.burst }),
    ...(more.length > 0 && { limits: more }),
    ...(failMode !== undefined && { failMode: failMode as FailMode }),
  };
  try {
    resolvePolicy({ ...definition, name });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  return { name, definition };
}
