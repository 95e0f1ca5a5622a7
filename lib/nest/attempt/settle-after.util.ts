// How an `@Attempt` call is settled once its handler is done: the Observable that settles exactly
// once, and the outcome the handler left (its HTTP status, the response's end).
import { Observable } from 'rxjs';
import type { RedlimitContextType } from '../contexts/execution-context.util';
import type { HttpResponseLike } from '../../http/http-request.util';
import type { ClosableResponse as NodeResponse } from '../leases/lease-release.util';
import type { AttemptOutcome } from '../throttle/redlimit.metadata';

/** Raised into `refundOn` when the client went away before the handler finished. */
export class AttemptCancelledError extends Error {
  override readonly name = 'AttemptCancelledError';
}

/**
 * Mirrors `source`, running `settle` exactly once when it completes, errors or is unsubscribed
 * before that (then with an `AttemptCancelledError`, unless `holdOnTeardown`: then never, and an
 * attempt's lease expires after its window); completion and errors are passed on only after
 * `settle` finished, so the response leaves with the refund applied. Should `settle` reject
 * anyway (a throwing hook in a subclass), the response still goes out: a settlement problem is
 * never the client's.
 */
export function settleAfter<T>(
  source: Observable<T>,
  settle: (outcome: AttemptOutcome) => Promise<void>,
  holdOnTeardown: boolean,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let finished = false;
    let last: T | undefined;
    const finish = (outcome: AttemptOutcome): Promise<void> => {
      finished = true;
      return settle(outcome).catch(() => undefined);
    };
    const subscription = source.subscribe({
      next: (value) => {
        last = value;
        subscriber.next(value);
      },
      error: (error: unknown) => {
        void finish({ ok: false, error }).then(() => subscriber.error(error));
      },
      complete: () => {
        void finish({ ok: true, result: last }).then(() => subscriber.complete());
      },
    });
    return () => {
      subscription.unsubscribe();
      if (!finished && !holdOnTeardown) {
        void finish({ ok: false, error: new AttemptCancelledError('request cancelled') });
      }
    };
  });
}

/**
 * The outcome with, over HTTP, the status the handler left on the response (Express's
 * `res.statusCode`, Fastify's `reply.statusCode`): a failure the handler reports by its status
 * is not a success. GraphQL (errors as data), gateways and microservices have none.
 */
export function withStatus(
  outcome: AttemptOutcome,
  type: RedlimitContextType,
  response: HttpResponseLike | undefined,
): AttemptOutcome {
  if (!outcome.ok || type !== 'http') return outcome;
  const status = (response as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? { ...outcome, status } : outcome;
}

/** A Node response's end: true once sent in full, false when the connection closed before. */
export function responseEnd(response: NodeResponse): Promise<boolean> {
  if (response.writableFinished) return Promise.resolve(true);
  if (response.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    response.once('close', () => resolve(response.writableFinished === true));
  });
}
