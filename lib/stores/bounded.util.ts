import { StoreTimeoutError } from '../core/errors';

/**
 * `promise`, or a StoreTimeoutError after `ms`: for the store's own background calls (the fleet's
 * heartbeat and reconciliation, the settling of lost replies), which have no caller's deadline.
 * A client may drop the commands of a broken connection without ever settling their promises
 * (ioredis with `autoResendUnfulfilledCommands: false`): unbounded, one such call would stop every
 * later one that waits for it. The call itself is not cancelled; what it does if it still runs
 * must be safe to do again (each caller says why it is).
 */
export function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(ms, what)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
