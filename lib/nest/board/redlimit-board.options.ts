import type { CanActivate, Type } from '@nestjs/common';
import { checkOptions } from '../../core/options.util';

/**
 * Who may open the board: a function of the request (Express or Fastify request object) that
 * resolves true to let it in, or a Nest guard class (it then runs as the board's guard, with
 * dependency injection). Anything else is a 403.
 */
export type BoardAuthorize = ((request: unknown) => boolean | Promise<boolean>) | Type<CanActivate>;

/** Options of `RedlimitBoardModule.forRoot()`. */
export interface RedlimitBoardOptions {
  /**
   * Where the board is served, e.g. `'/ops/limits'` (the app's global prefix, if any, goes before
   * it). Letters, digits, `-`, `_`, `.` and `/`; starts with `/`, no trailing `/`.
   */
  readonly path: string;
  /**
   * Required: the board is off unless the app says who may use it. Runs before every page,
   * asset and action.
   */
  readonly authorize: BoardAuthorize;
  /** Shows figures only: no unlock or grant buttons, and the actions answer 403 (default false). */
  readonly readOnly?: boolean;
  /**
   * Who is acting, for the audit (e.g. the signed-in operator's name from the request); default
   * `'board'`. At most 200 characters are kept.
   */
  readonly actor?: (request: unknown) => string | undefined;
  /** How often this app writes what it counted for the board, in ms (100–60,000; default 2,000). */
  readonly flushMs?: number;
}

const OPTIONS: readonly (keyof RedlimitBoardOptions)[] = [
  'path',
  'authorize',
  'readOnly',
  'actor',
  'flushMs',
];

/** The board's options, checked (every error names the option), before anything is created. */
export function checkBoardOptions(options: RedlimitBoardOptions): RedlimitBoardOptions {
  checkOptions(options, OPTIONS, 'RedlimitBoardModule options');
  if (options === undefined) {
    throw new TypeError('RedlimitBoardModule.forRoot() needs options: { path, authorize }');
  }
  const { path, authorize, readOnly, actor, flushMs } = options;
  if (
    typeof path !== 'string' ||
    !/^(\/[A-Za-z0-9._-]+)+$/.test(path) ||
    path.split('/').some((segment) => segment === '.' || segment === '..')
  ) {
    throw new TypeError(
      `RedlimitBoardModule path must look like '/ops/limits' (starts with '/', no trailing '/', ` +
        `letters, digits, '-', '_', '.', no '.' or '..' segment); got ${JSON.stringify(path)}`,
    );
  }
  if (typeof authorize !== 'function') {
    throw new TypeError(
      'RedlimitBoardModule authorize is required: a function (request) => boolean | Promise<boolean>, ' +
        'or a guard class; the board is never served to everyone',
    );
  }
  if (readOnly !== undefined && typeof readOnly !== 'boolean') {
    throw new TypeError(
      `RedlimitBoardModule readOnly must be true or false; got ${String(readOnly)}`,
    );
  }
  if (actor !== undefined && typeof actor !== 'function') {
    throw new TypeError(
      'RedlimitBoardModule actor must be a function (request) => string | undefined',
    );
  }
  if (
    flushMs !== undefined &&
    (!Number.isSafeInteger(flushMs) || flushMs < 100 || flushMs > 60_000)
  ) {
    throw new RangeError(
      `RedlimitBoardModule flushMs must be a whole number of ms from 100 to 60000; got ${String(flushMs)}`,
    );
  }
  return options;
}

/** Whether `authorize` is a guard class (a class whose instances have `canActivate`). */
export function isGuardClass(authorize: BoardAuthorize): authorize is Type<CanActivate> {
  const prototype = (authorize as { prototype?: { canActivate?: unknown } }).prototype;
  return typeof prototype?.canActivate === 'function';
}
