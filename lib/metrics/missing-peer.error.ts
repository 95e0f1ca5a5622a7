/**
 * A feature was asked for whose optional peer package is not installed (e.g. Prometheus metrics
 * without `prom-client`). The message names the package and how to install it.
 *
 * @example
 * try {
 *   prometheusMetrics(events);
 * } catch (err) {
 *   if (err instanceof MissingPeerDependencyError) console.error(err.packageName); // 'prom-client'
 * }
 */
export class MissingPeerDependencyError extends Error {
  /** Always `'MissingPeerDependencyError'`: survives serialisation and minification, unlike the class name. */
  override readonly name = 'MissingPeerDependencyError';

  constructor(
    /** The package that is missing. */
    readonly packageName: string,
    /** What needed it, as the user asked for it (e.g. `'Prometheus metrics'`). */
    readonly feature: string,
  ) {
    super(
      `redlimit: ${feature} need the '${packageName}' package, which is not installed. ` +
        `Install it (npm install ${packageName}) or turn ${feature} off.`,
    );
  }
}

/**
 * Loads an optional peer package when a feature needs it, never at import time. `load` is a
 * literal `require('name')`, so bundlers see which package it is.
 *
 * @throws MissingPeerDependencyError when the package itself cannot be found (any other error,
 *   such as one thrown while the package loads, is rethrown as is)
 */
export function loadOptionalPeer<T>(load: () => unknown, packageName: string, feature: string): T {
  try {
    return load() as T;
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    const notFound = code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND';
    if (notFound && typeof message === 'string' && message.includes(`'${packageName}'`)) {
      throw new MissingPeerDependencyError(packageName, feature);
    }
    throw error;
  }
}
