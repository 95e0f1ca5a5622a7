import type { Decision } from '../core/decision';
import type { Limiter } from '../core/limiter';

/** The Node response under an adapter's: Express's is one; Fastify's reply carries it as `raw`. */
interface ClosableResponse {
  once(event: 'close', listener: () => void): unknown;
  readonly writableFinished?: boolean;
  readonly destroyed?: boolean;
}

/**
 * Releases the `concurrency` leases a guard took once the response has been sent or the
 * connection closed (the client went away, the handler threw, a stream ended): Node's `close` on
 * the response, which comes after `finish` and on an abort alike. Each lease is released once;
 * a release that fails is handed to `onError` (the lease then expires after its window).
 *
 * @returns false when there is no Node response to wait for (WebSocket, microservice): the
 *   caller leaves the leases to `LeaseReleaseInterceptor`, which releases when the handler settles
 * @example
 * releaseOnClose(response, [{ limiter, decision }], (error) => logger.warn(String(error)));
 */
export function releaseOnClose(
  response: unknown,
  leases: ReadonlyArray<{ readonly limiter: Limiter; readonly decision: Decision }>,
  onError: (error: unknown, decision: Decision) => void,
): boolean {
  const held = leases.filter(
    ({ decision }) => decision.receipt.spent && decision.receipt.algorithm === 'concurrency',
  );
  if (held.length === 0) return true;
  const node = nodeResponse(response);
  if (!node) return false;
  const release = () => releaseLeases(held, onError);
  if (node.destroyed || node.writableFinished) release();
  else node.once('close', release);
  return true;
}

/**
 * Releases leases now, each once; a release that fails is handed to `onError` (the lease then
 * expires after its window).
 *
 * @example
 * releaseLeases(leases, (error, decision) => logger.warn(leaseReleaseWarning(decision, error)));
 */
export function releaseLeases(
  leases: ReadonlyArray<{ readonly limiter: Limiter; readonly decision: Decision }>,
  onError: (error: unknown, decision: Decision) => void,
): void {
  for (const { limiter, decision } of leases) {
    limiter.release(decision).catch((error: unknown) => onError(error, decision));
  }
}

/**
 * The log line of a lease that could not be released.
 *
 * @example
 * logger.warn(leaseReleaseWarning(decision, error));
 */
export function leaseReleaseWarning(decision: Decision, error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error);
  return `Could not release a lease of policy '${decision.policy}'; it expires after its window (${reason})`;
}

function nodeResponse(response: unknown): ClosableResponse | undefined {
  const candidates = [response, (response as { raw?: unknown } | undefined)?.raw];
  for (const candidate of candidates) {
    if (typeof (candidate as { once?: unknown } | undefined)?.once === 'function') {
      return candidate as ClosableResponse;
    }
  }
  return undefined;
}
