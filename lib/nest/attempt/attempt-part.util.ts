import type { AttemptPart, AttemptPartFn, AttemptPartSpec } from '../throttle/redlimit.metadata';
import { checkUnknownOptions } from '../../core/options.util';

/**
 * Where a field part is read: the HTTP `body`, `query`, route `params` or `headers` (also the
 * headers of the HTTP request behind a GraphQL operation or a WebSocket), the GraphQL resolver's
 * `args`, the `data` of a WebSocket message or a microservice payload.
 */
export type FieldSource = 'body' | 'query' | 'params' | 'headers' | 'args' | 'data';

/** Every {@link FieldSource}, in the order error messages list them. */
export const FIELD_SOURCES: readonly FieldSource[] = [
  'body',
  'query',
  'params',
  'headers',
  'args',
  'data',
];

/** A field reference, parsed: `'body.user.email'` → source `body`, path `['user', 'email']`. */
export interface FieldRef {
  /** As written: `'email'`, `'params.email'`, `'headers.x-user'`. */
  readonly text: string;
  /** The source named, or none for a bare name (looked up in every source of the context). */
  readonly source?: FieldSource;
  /** Property names from the source down to the value; a header name for `headers`. */
  readonly path: readonly string[];
}

/** An `@Attempt` part, checked and ready to resolve; see {@link resolveAttemptPart}. */
export type ResolvedAttemptPart =
  | {
      /** One of the special parts: the client IP, the authenticated user, or the API key. */
      readonly kind: 'ip' | 'user' | 'apiKey';
      /** Key name: the kind itself (`ip` in `ip:<hash>`). */
      readonly name: string;
    }
  | {
      /** A value read from the request (`'email'`, `{ field: 'body.email' }`). */
      readonly kind: 'field';
      /** Key name: `email` in `email:<hash>`. */
      readonly name: string;
      /** Where the value is read. */
      readonly field: FieldRef;
      /** Whether equivalent spellings share a budget (see {@link AttemptPartSpec.normalize}). */
      readonly normalize: boolean;
    }
  | {
      /** A value computed from the context by a function of yours. */
      readonly kind: 'function';
      /** Key name: the spec's `name`, else the function's name, else `part<index>`. */
      readonly name: string;
      /** The function that returns the value. */
      readonly fn: AttemptPartFn;
      /** Whether equivalent spellings share a budget (see {@link AttemptPartSpec.normalize}). */
      readonly normalize: boolean;
    };

const SPECIAL_PARTS: ReadonlySet<string> = new Set(['ip', 'user', 'apiKey']);
const SPEC_KEYS: ReadonlySet<string> = new Set(['field', 'value', 'name', 'normalize']);
const UNSAFE_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Parses a field reference: a bare name (`'email'`) or a source and a path (`'body.email'`,
 * `'body.user.email'`, `'query.email'`, `'params.email'`, `'headers.x-user'`, `'args.input.email'`,
 * `'data.email'`). A dotted name must start with a source, so a typo fails here instead of
 * reading nothing.
 *
 * @throws TypeError naming the reference and what is wrong with it
 * @example
 * parseFieldRef('body.user.email'); // { text: 'body.user.email', source: 'body', path: ['user', 'email'] }
 */
export function parseFieldRef(text: string, where = '@Attempt()'): FieldRef {
  const fail = (why: string): never => {
    throw new TypeError(`${where}: field ${JSON.stringify(text)} ${why}`);
  };
  if (typeof text !== 'string' || text.trim() !== text || text === '') {
    fail('must be a non-empty name without surrounding spaces');
  }
  const dot = text.indexOf('.');
  if (dot < 0) {
    if (UNSAFE_SEGMENTS.has(text)) fail('is not a usable field name');
    return { text, path: [text] };
  }
  const source = text.slice(0, dot) as FieldSource;
  if (!FIELD_SOURCES.includes(source)) {
    fail(
      `starts with '${source}', which is not a source; expected ${FIELD_SOURCES.join(', ')} ` +
        `(e.g. 'body.${text}'), or a bare name without dots`,
    );
  }
  const rest = text.slice(dot + 1);
  if (source === 'headers') {
    if (!HEADER_NAME.test(rest)) fail('does not name an HTTP header after "headers."');
    return { text, source, path: [rest.toLowerCase()] };
  }
  const path = rest.split('.');
  if (path.some((segment) => segment === '' || UNSAFE_SEGMENTS.has(segment))) {
    fail(`needs property names after '${source}.', separated by single dots`);
  }
  return { text, source, path };
}

/**
 * Checks one `@Attempt` part and says how it is resolved: `'ip'`, `'user'`, `'apiKey'`, a field
 * reference ({@link parseFieldRef}), a function, or an {@link AttemptPartSpec} object. Field
 * parts are keyed by their last path segment (`'params.email'` → `email:<hash>`), so routes that
 * read the account from different places share its budget.
 *
 * @throws TypeError naming the part (by index) and what is wrong with it
 * @example
 * resolveAttemptPart({ field: 'body.token', normalize: false }, 0);
 * // { kind: 'field', name: 'token', field: { … }, normalize: false }
 */
export function resolveAttemptPart(part: AttemptPart, index: number): ResolvedAttemptPart {
  const where = `@Attempt() parts[${index}]`;
  if (typeof part === 'function') {
    return { kind: 'function', name: part.name || `part${index}`, fn: part, normalize: true };
  }
  if (typeof part === 'string') {
    if (SPECIAL_PARTS.has(part)) return { kind: part as 'ip' | 'user' | 'apiKey', name: part };
    const field = parseFieldRef(part, where);
    return { kind: 'field', name: keyName(field, undefined, where), field, normalize: true };
  }
  if (part === null || typeof part !== 'object' || Array.isArray(part)) {
    throw new TypeError(
      `${where} must be 'ip', 'user', 'apiKey', a field such as 'body.email', a function, ` +
        `or { field | value, name?, normalize? }; got ${describe(part)}`,
    );
  }
  const spec: AttemptPartSpec = part;
  checkUnknownOptions(
    spec,
    SPEC_KEYS,
    where,
    'expected field or value, and optionally name, normalize',
  );
  if (spec.normalize !== undefined && typeof spec.normalize !== 'boolean') {
    throw new TypeError(
      `${where} normalize must be true or false; got ${describe(spec.normalize)}`,
    );
  }
  if (spec.name !== undefined && !validName(spec.name)) {
    throw new TypeError(
      `${where} name must be a non-empty key name without ':' or spaces; got ${describe(spec.name)}`,
    );
  }
  const normalize = spec.normalize ?? true;
  if ((spec.field === undefined) === (spec.value === undefined)) {
    throw new TypeError(
      `${where} needs exactly one of field (a field reference) and value (a function)`,
    );
  }
  if (spec.value !== undefined) {
    if (typeof spec.value !== 'function') {
      throw new TypeError(`${where} value must be a function of the context`);
    }
    const name = spec.name ?? (spec.value.name || `part${index}`);
    return { kind: 'function', name, fn: spec.value, normalize };
  }
  const field = parseFieldRef(spec.field!, where);
  return { kind: 'field', name: keyName(field, spec.name, where), field, normalize };
}

function keyName(field: FieldRef, given: string | undefined, where: string): string {
  const name = given ?? field.path[field.path.length - 1]!;
  if (!validName(name)) {
    throw new TypeError(
      `${where}: the key name ${JSON.stringify(name)} of field '${field.text}' contains ':' or ` +
        "spaces; give one with { field, name: 'email' }",
    );
  }
  return name;
}

function validName(name: unknown): name is string {
  return typeof name === 'string' && /^[^\s:]+$/.test(name);
}

function describe(value: unknown): string {
  return typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value));
}

/** Parts that name the requester itself, never a login. */
export const REQUESTER_PARTS: ReadonlySet<unknown> = new Set(['ip', 'apiKey', 'user']);

/**
 * The index of an `@Attempt`'s login part for trusted devices: the part `devices` names, or with
 * `true` the one part that is not `'ip'`, `'apiKey'` or `'user'`.
 *
 * @throws TypeError when `devices` is true and there is no such part, or more than one
 */
export function loginPartOf(parts: readonly AttemptPart[], devices: true | string): number {
  if (devices !== true) return parts.indexOf(devices);
  const candidates = parts.flatMap((part, i) => (REQUESTER_PARTS.has(part) ? [] : [i]));
  if (candidates.length !== 1) {
    throw new TypeError(
      `@Attempt() devices: true needs exactly one login part besides 'ip', 'apiKey' and 'user' ` +
        `(found ${candidates.length}); name it instead: devices: 'body.email'`,
    );
  }
  return candidates[0]!;
}
