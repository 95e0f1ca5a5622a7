import type { Decision, StoreFailure } from './decision';
import { processWarning, warnEvery } from './warn-every.util';

/** The limiter options that take its reports (see `LimiterOptions`). */
export interface ReportHandlers {
  /** Called for every store failure a decision absorbed. */
  readonly onStoreFailure?: (failure: StoreFailure, policy: string) => void;
  /** Called for every refusal a policy in shadow mode let through. */
  readonly onShadowRefusal?: (decision: Decision) => void;
  /** Called when `attempt()` cannot apply a refund after its body finished. */
  readonly onSettleError?: (error: unknown, decision: Decision) => void;
}

/**
 * What a limiter reports besides its decisions: store failures it absorbed, refusals a policy in
 * shadow mode let through, and refunds `attempt()` could not apply. Each goes to the limiter's
 * option (`onStoreFailure`, `onShadowRefusal`, `onSettleError`) when set, else to a process
 * warning (`RedlimitWarning`); failures and shadow refusals warn at most once every 10 s.
 *
 * @example
 * const reports = new LimiterReports('login', { onStoreFailure: (f) => log.warn(f.error) });
 */
export class LimiterReports {
  private readonly warnFailure = warnEvery(processWarning);
  private readonly warnShadow = warnEvery(processWarning);

  constructor(
    /** The policy's name, as warnings give it. */
    private readonly policy: string,
    private readonly options: ReportHandlers,
  ) {}

  /** A store failure a decision absorbed (timeout or error). */
  storeFailure(failure: StoreFailure): void {
    if (this.options.onStoreFailure) {
      this.options.onStoreFailure(failure, this.policy);
      return;
    }
    this.warnFailure(
      () =>
        `redlimit: store ${failure.reason} for policy '${this.policy}', failing ${failure.failMode}: ${failure.error.message}`,
    );
  }

  /** A refusal a policy in shadow mode let through. */
  shadowRefusal(decision: Decision): void {
    if (this.options.onShadowRefusal) {
      this.options.onShadowRefusal(decision);
      return;
    }
    this.warnShadow(
      (count) =>
        `redlimit: policy '${this.policy}' is in shadow mode and let through ${count} refusal${count === 1 ? '' : 's'} since its last report`,
    );
  }

  /** A refund `attempt()` could not apply after its body finished (the cost was kept). */
  settleError(error: unknown, decision: Decision): void {
    if (this.options.onSettleError) {
      this.options.onSettleError(error, decision);
      return;
    }
    const reason = error instanceof Error ? error.message : String(error);
    processWarning(
      `redlimit: could not refund a spend of policy '${decision.policy}' (the cost was kept): ${reason}`,
    );
  }
}
