// Spending and trusting for `@Attempt(…, { devices })`: the device's own budget when a token
// signed for the login is presented, the device token set on a successful sign-in.
import type { Attempt } from '../../core/attempt';
import type { Decision } from '../../core/decision';
import { RateLimitedError, StoreUnavailableError } from '../../core/errors';
import { Limiter } from '../../core/limiter';
import type { EpochReading } from '../../core/store';
import type { HttpResponseLike } from '../../http/http-request.util';
import { MISSING_VALUE } from '../../http/key-hash.util';
import type { RequestView } from '../throttle/request-view';
import type { AttemptPlan } from '../throttle/route-plan';
import type { RedlimitDevices, TrustedDevice } from './redlimit-devices.service';

/**
 * The login of an `@Attempt(…, { devices })` call, and, when trusted, the device it was charged
 * to and the epoch reading that trusted it.
 */
export interface DeviceSpend {
  readonly loginKey: string;
  /** The sign-in policy the device is (or will be) trusted for. */
  readonly policy: string;
  readonly trusted?: TrustedDevice;
  readonly reading?: EpochReading;
}

/**
 * Spends an `@Attempt(…, { devices })` call. With a token signed for the login, the login
 * part's key is replaced by the device's and the device's lifetime failure count is charged
 * beside, in one decision, while the login's device epoch and the store's clock are read (one
 * more command in the same round trip on a pipelining client). The device is trusted if the
 * token is unexpired on that clock and at that epoch; else what it spent goes back and the call
 * is charged as any other, as it is without a token or with a bad one (no different answer,
 * whatever was wrong).
 */
export async function spendWithDevice(
  devices: RedlimitDevices | undefined,
  onSettleError: (error: unknown, decision: Decision) => void,
  view: RequestView,
  plan: AttemptPlan,
  limiter: Limiter,
  keys: string[],
  cost: number | undefined,
): Promise<{ attempt: Attempt; device?: DeviceSpend }> {
  const { metadata } = plan;
  if (devices === undefined || !devices.enabled) {
    throw new Error(
      `@Attempt(…, { devices: ${JSON.stringify(metadata.devices)} }) needs RedlimitModule's devices option` +
        (devices === undefined
          ? ' (and a custom attemptInterceptor must pass RedlimitDevices to super())'
          : ''),
    );
  }
  const request = view.request;
  if (request === undefined) return { attempt: await limiter.begin(keys, { cost }) };
  const index = plan.loginPart!;
  const partKey = keys[index]!;
  const loginKey = devices.loginKeyOf(partKey);
  const policy = limiter.policy.name;
  const trusted = devices.recognise(request, partKey, policy);
  if (trusted !== undefined) {
    const deviceKeys = keys.map((key, i) => (i === index ? trusted.key : key));
    const [reading, spent] = await Promise.all([
      devices.epochOf(loginKey).catch(() => undefined),
      Limiter.beginAll([
        { limiter, keys: deviceKeys, ...(cost !== undefined && { cost }) },
        { limiter: devices.lifeLimiter(limiter), keys: trusted.key },
      ]).then(
        (attempt) => ({ attempt }),
        (error: unknown) => ({ error }),
      ),
    ]);
    // The store failed and a fail mode decided (failMode 'memory' counting in process): the
    // epoch cannot be read, so a signed token unexpired on this process's clock is trusted
    // (revocations unseen until the store is back), or the attacker, counted in the fallback
    // too, would keep the owner out for the length of the outage.
    const decided = 'attempt' in spent ? spent.attempt.decision : decisionOf(spent.error);
    const outage = reading === undefined && decided?.failure !== undefined;
    if (
      outage ? devices.liveNow(trusted) : reading !== undefined && devices.live(trusted, reading)
    ) {
      if ('error' in spent) throw spent.error;
      return { attempt: spent.attempt, device: { loginKey, policy, trusted, reading } };
    }
    // Expired, revoked, or the epoch could not be read: not trusted; what it spent goes back.
    if ('attempt' in spent) {
      spent.attempt.refund();
      await spent.attempt.settle().catch((error: unknown) => {
        onSettleError(error, spent.attempt.decision);
      });
    }
  }
  return { attempt: await limiter.begin(keys, { cost }), device: { loginKey, policy } };
}

/**
 * Sets the device token on the response of a successful attempt: the presented device's,
 * renewed, or a new device's. Skipped when the response is already sent (a handler answering
 * through `@Res()`: call `RedlimitDevices.trust` there) or the login part was missing.
 */
export async function trustDevice(
  devices: RedlimitDevices | undefined,
  view: RequestView,
  device: DeviceSpend,
): Promise<void> {
  const response = view.response;
  if (devices === undefined || response === undefined || responseSent(response)) return;
  if (device.loginKey === MISSING_VALUE) return;
  const reading = device.reading ?? (await devices.epochOf(device.loginKey));
  const token = devices.tokenFor(device.loginKey, device.policy, device.trusted?.nonce, reading);
  if (!responseSent(response)) devices.setCookie(response, token, device.policy, device.loginKey);
}

/** The decision a refusal carries, if `error` is one. */
function decisionOf(error: unknown): Decision | undefined {
  return error instanceof RateLimitedError || error instanceof StoreUnavailableError
    ? error.decision
    : undefined;
}

/** Whether the response's headers are gone (Express/Node `headersSent`, Fastify `sent`). */
export function responseSent(response: HttpResponseLike): boolean {
  const target = response as { headersSent?: unknown; sent?: unknown };
  return target.headersSent === true || target.sent === true;
}
