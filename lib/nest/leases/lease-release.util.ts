import type { ExecutionContext } from '@nestjs/common';
import type { Decision } from '../../core/decision';
import type { Limiter } from '../../core/limiter';
import { redlimitContextType } from '../contexts/execution-context.util';

/** The Node response under an adapter's: Express's is one; Fastify's reply carries it as `raw`. */
/** What the lease hold (and `@Attempt` settling) reads of a Node response. */
export interface ClosableResponse {
  once(event: 'close', listener: () => void): unknown;
  readonly writableFinished?: boolean;
  readonly destroyed?: boolean;
}

/** A `concurrency` lease a guard took, with the limiter that releases it. */
export interface HeldLease {
  readonly limiter: Limiter;
  readonly decision: Decision;
}

/**
 * The `concurrency` leases a guard took for one handler call, released once the handler's work
 * has settled, never earlier because the client left:
 *
 * - when `LeaseReleaseInterceptor` saw the handler's result settle (its promise settled, its
 *   Observable completed or errored) and the response is over (sent, or its connection closed:
 *   a streaming response holds the lease until its last byte);
 * - when the response was sent in full before the handler was reached (a later guard refused,
 *   an interceptor answered from a cache): the handler never runs;
 * - never, when the handler's Observable was torn down before it settled (Nest does so when the
 *   client goes away) or when the client went away before the handler was reached and it was
 *   never seen to settle: the work behind it may go on unseen (`from(promise)`), so the lease
 *   expires after its `window`, the upper bound for work that never settles.
 *
 * Each lease is released once; a release that fails is handed to `onError` (the lease then
 * expires after its window).
 */
export class LeaseHold {
  private watched = false;
  private settled = false;
  private abandoned = false;
  private responseOver: boolean;
  private sentInFull = false;
  private released = false;

  constructor(
    private readonly leases: readonly HeldLease[],
    private readonly onError: (error: unknown, decision: Decision) => void,
    response: ClosableResponse | undefined,
  ) {
    this.responseOver = response === undefined;
    if (response) {
      if (response.destroyed || response.writableFinished) this.closed(response);
      else response.once('close', () => this.closed(response));
    }
  }

  /** The interceptor has the handler's call: from now on its settling decides. */
  watch(): void {
    this.watched = true;
  }

  /** The handler's result settled (promise settled, Observable completed or errored). */
  settle(): void {
    this.settled = true;
    this.releaseIfDone();
  }

  /** The handler's Observable was torn down before it settled: the lease runs to its window. */
  abandon(): void {
    if (!this.settled) this.abandoned = true;
  }

  private closed(response: ClosableResponse): void {
    this.responseOver = true;
    this.sentInFull = response.writableFinished === true;
    this.releaseIfDone();
  }

  private releaseIfDone(): void {
    if (this.released || this.abandoned || !this.responseOver) return;
    if (!this.settled && (this.watched || !this.sentInFull)) return;
    this.released = true;
    releaseLeases(this.leases, this.onError);
  }
}

/** The holds of one call: by the HTTP request, else by the call's argument list. */
const holdsByCall = new WeakMap<object, LeaseHold[]>();

/**
 * What guard and interceptors of one call share: the request over HTTP, else the arguments (as
 * `RequestView.call`).
 */
function callOf(context: ExecutionContext): object {
  // Nest hands an HTTP route's guards and interceptors different argument lists, one request.
  return redlimitContextType(context) === 'http'
    ? context.getArgByIndex<object>(0)
    : context.getArgs();
}

/**
 * Holds the `concurrency` leases a guard took for a call (see {@link LeaseHold}) until the
 * handler's work has settled; `call` is what the call's guards and interceptors share
 * (`RequestView.call`: the HTTP request, else the argument list), `response` the call's HTTP
 * response (GraphQL over HTTP too), if any. Leases of other algorithms and unspent ones are left
 * alone.
 *
 * @example
 * holdLeases(view.call, view.response, [{ limiter, decision }], (error, d) => logger.warn(String(error)));
 */
export function holdLeases(
  call: object,
  response: unknown,
  leases: readonly HeldLease[],
  onError: (error: unknown, decision: Decision) => void,
): void {
  const held = leases.filter(
    ({ decision }) => decision.receipt.spent && decision.receipt.algorithm === 'concurrency',
  );
  if (held.length === 0) return;
  const hold = new LeaseHold(held, onError, nodeResponse(response));
  const holds = holdsByCall.get(call);
  if (holds) holds.push(hold);
  else holdsByCall.set(call, [hold]);
}

/**
 * The holds guards left for this call, handed over once (a second interceptor gets none).
 *
 * @example
 * const holds = takeLeaseHolds(context); // undefined: nothing leased
 */
export function takeLeaseHolds(context: ExecutionContext): LeaseHold[] | undefined {
  const call = callOf(context);
  const holds = holdsByCall.get(call);
  if (holds) holdsByCall.delete(call);
  return holds;
}

/**
 * Releases leases now, each once; a release that fails is handed to `onError` (the lease then
 * expires after its window).
 *
 * @example
 * releaseLeases(leases, (error, decision) => logger.warn(leaseReleaseWarning(decision, error)));
 */
export function releaseLeases(
  leases: readonly HeldLease[],
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

/** The Node response under a Nest response (Express's is one; Fastify's reply holds it as `raw`). */
export function nodeResponse(response: unknown): ClosableResponse | undefined {
  const candidates = [response, (response as { raw?: unknown } | undefined)?.raw];
  for (const candidate of candidates) {
    if (typeof (candidate as { once?: unknown } | undefined)?.once === 'function') {
      return candidate as ClosableResponse;
    }
  }
  return undefined;
}
