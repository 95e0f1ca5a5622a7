import type { ExecutionContext } from '@nestjs/common';
import { type FieldRef, type FieldSource, parseFieldRef } from '../attempt/attempt-part.util';
import { checkKnownNames } from '../../core/options.util';
import { contextRequest, redlimitContextType } from './execution-context.util';
import type { HttpRequestLike } from '../../http/http-request.util';
import { IdentityInputError } from '../../http/identity-input.error';
import { normalizeIdentity } from '../../http/identity-normalize.util';

/** Where a bare field name is looked up, per context. */
const BARE_SOURCES = {
  http: ['body', 'params', 'query'],
  graphql: ['args'],
  ws: ['data'],
  rpc: ['data'],
} as const satisfies Record<string, readonly FieldSource[]>;

/** The sources each context has (the headers are those of the HTTP request behind it). */
const CONTEXT_SOURCES: Readonly<Record<keyof typeof BARE_SOURCES, readonly FieldSource[]>> = {
  http: ['body', 'query', 'params', 'headers'],
  graphql: ['args', 'headers'],
  ws: ['data', 'headers'],
  rpc: ['data'],
};

const CONTEXT_NAMES = {
  http: 'an HTTP route',
  graphql: 'a GraphQL resolver',
  ws: 'a WebSocket gateway handler',
  rpc: 'a microservice handler',
} as const;

/** How {@link readContextField} compares and reports values. */
export interface ReadFieldOptions {
  /** The part as written, for error messages. Default: the field reference. */
  readonly part?: string;
  /** Compare values normalised ({@link normalizeIdentity}; default) or exactly as sent. */
  readonly normalize?: boolean;
}

/** Options of {@link contextField}. */
export interface ContextFieldOptions {
  /**
   * The value exactly as sent (`true`), for case-sensitive values such as tokens. Default
   * `false`: normalised as `@Attempt` parts are ({@link normalizeIdentity}: NFKC, lower case,
   * trimmed, invisible characters removed), so `'Ada@…'`, `' ada@…'` and `'ＡＤＡ@…'` give one key.
   */
  readonly raw?: boolean;
}

const CONTEXT_FIELD_OPTIONS: ReadonlySet<string> = new Set(['raw']);

/**
 * A value the caller sent, by field reference: a bare name (`'email'`) or a source and path
 * (`'query.email'`, `'body.user.email'`, `'headers.x-user'`; `'args.input.email'` in GraphQL,
 * `'data.email'` in gateways and microservices). A bare name is looked up in the HTTP body,
 * route params and query; in the GraphQL arguments and the fields of object arguments; in the
 * message data or payload. `undefined` when absent.
 *
 * The value is normalised as `@Attempt` parts are ({@link normalizeIdentity}), so a key function
 * built on it gives one budget per account however it is spelled; `{ raw: true }` returns it as
 * sent (for case-sensitive values; the caller then controls every spelling of it).
 *
 * Refuses what could charge someone else's budget, with an {@link IdentityInputError}: a value
 * that is not a string or a finite number (arrays, objects, booleans, `null`), and a bare name
 * present in several places with different values (after normalisation, or exactly with `raw`).
 *
 * @throws IdentityInputError as above (the guard and the interceptor answer 400 or the context's
 *   equivalent)
 * @throws Error when the source makes no sense in the context (`'body.email'` in a resolver)
 * @throws TypeError when `options` holds an unknown option or `raw` is not a boolean
 * @example
 * contextField(context, 'email'); // 'alice@example.com' (sent as ' Alice@Example.com')
 * contextField(context, 'headers.x-tenant'); // 'acme'
 * contextField(context, 'body.token', { raw: true }); // 'Tok-123', as sent
 */
export function contextField(
  context: ExecutionContext,
  name: string,
  options: ContextFieldOptions = {},
): string | undefined {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('contextField() options must be an object { raw? }');
  }
  checkKnownNames(
    options,
    CONTEXT_FIELD_OPTIONS,
    (option, known) => `contextField() options.${option} is not an option (known: ${known})`,
  );
  const { raw = false } = options;
  if (typeof raw !== 'boolean') {
    throw new TypeError(`contextField() options.raw must be true or false; got ${String(raw)}`);
  }
  const value = readContextField(context, parseFieldRef(name, 'contextField()'), {
    normalize: !raw,
  });
  return value === undefined || raw ? value : normalizeIdentity(value);
}

/**
 * {@link contextField} for a parsed reference, comparing values per `options.normalize`.
 *
 * @example
 * readContextField(context, parseFieldRef('params.email'), { part: 'params.email' });
 */
export function readContextField(
  context: ExecutionContext,
  field: FieldRef,
  options: ReadFieldOptions = {},
): string | undefined {
  const type = redlimitContextType(context);
  if (type === undefined) return undefined;
  const part = options.part ?? field.text;
  if (field.source !== undefined && !CONTEXT_SOURCES[type].includes(field.source)) {
    throw new Error(
      `redlimit: field '${field.text}' on ${context.getClass().name}.${context.getHandler().name}: ` +
        `${CONTEXT_NAMES[type]} has no '${field.source}'; it has ` +
        `${CONTEXT_SOURCES[type].map((s) => `'${s}.…'`).join(', ')}, or use a bare name`,
    );
  }
  const found: Array<{ source: string; text: string }> = [];
  for (const { source, root } of roots(context, type, field)) {
    const value = walk(root, field.path);
    if (value === undefined) continue;
    const text = scalarText(value);
    if (text === undefined) throw new IdentityInputError(part, 'not-scalar');
    found.push({ source, text });
  }
  if (found.length === 0) return undefined;
  const compare = options.normalize === false ? (t: string) => t : normalizeIdentity;
  const first = compare(found[0]!.text);
  if (found.some(({ text }) => compare(text) !== first)) {
    throw new IdentityInputError(part, 'conflict', [...new Set(found.map((f) => f.source))]);
  }
  return found[0]!.text;
}

/** The objects a reference is walked from, labelled by source. */
function roots(
  context: ExecutionContext,
  type: keyof typeof BARE_SOURCES,
  field: FieldRef,
): Array<{ source: string; root: unknown }> {
  const sources: readonly FieldSource[] = field.source ? [field.source] : BARE_SOURCES[type];
  const result: Array<{ source: string; root: unknown }> = [];
  for (const source of sources) {
    switch (source) {
      case 'headers':
        result.push({ source, root: contextRequest(context)?.headers });
        break;
      case 'body':
      case 'params':
      case 'query': {
        const request = context.getArgByIndex<HttpRequestLike>(0);
        result.push({ source, root: request[source] });
        break;
      }
      case 'args': {
        const args = context.getArgByIndex<unknown>(1);
        result.push({ source, root: args });
        // A bare name is also looked for one level down: signIn(input: { email }).
        if (field.source === undefined && isRecord(args)) {
          for (const [name, value] of Object.entries(args)) {
            if (isRecord(value) && !Array.isArray(value)) {
              result.push({ source: `args.${name}`, root: value });
            }
          }
        }
        break;
      }
      case 'data':
        result.push({
          source,
          root:
            type === 'ws'
              ? context.switchToWs().getData<unknown>()
              : context.switchToRpc().getData<unknown>(),
        });
        break;
    }
  }
  return result;
}

/** Follows own properties only; `undefined` as soon as a step is missing or not an object. */
function walk(root: unknown, path: readonly string[]): unknown {
  let current = root;
  for (const segment of path) {
    if (!isRecord(current) || !Object.prototype.hasOwnProperty.call(current, segment)) {
      return undefined;
    }
    current = current[segment];
  }
  return current;
}

/** Strings as they are, finite numbers and bigints as text; `undefined` for anything else. */
function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return value.toString();
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object';
}
