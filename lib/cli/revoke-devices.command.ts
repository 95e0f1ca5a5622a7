import { Deadlines } from '../core/deadlines';
import { StoreTimeoutError } from '../core/errors';
import type { Store } from '../core/store';
import { DEVICE_EPOCH_KEEP_MS, deviceEpochKey } from '../http/device-token.util';
import type { CliKey } from './cli-keys.util';
import { columns, formatWindow } from './cli-format.util';
import { storeError } from './cli.error';
import type { CommandOutput } from './policies.command';

/** What `revoke-devices` needs of the store: the device epoch bump of `RedlimitDevices`. */
export type EpochStore = Required<Pick<Store, 'bumpEpoch'>>;

/**
 * `redlimit revoke-devices`: for each login, moves its device epoch on by one (what
 * `RedlimitDevices.revokeAll` does), so every device token issued for it before counts as no token:
 * its attempts are charged to the account again. The epoch is kept 366 days, the longest a token
 * can live, whatever the app's `devices.ttl`. Tokens bind the login, not the part's name:
 * `email=…` and `username=…` of one value are one login. One script call
 * per login, in the order given; a failure stops there and says which logins were revoked before it.
 *
 * @throws CliError (exit code 3) when Redis fails or does not answer within `timeoutMs`
 * @example
 * (await revokeDevicesCommand(store, [{ input: 'email=alice@example.com', key: 'email:…' }], { timeoutMs: 5000 })).text;
 * // 'revoked the trusted devices of 1 login (epochs kept 366d):\n  email=alice@example.com  email:…  epoch 1'
 */
export async function revokeDevicesCommand(
  store: EpochStore,
  logins: readonly CliKey[],
  options: { readonly timeoutMs: number },
): Promise<CommandOutput> {
  const revoked: Array<{ input: string; key: string; epoch: number }> = [];
  // A hung server never answers: each bump is bounded (the client is dropped after a timeout).
  const deadlines = new Deadlines(options.timeoutMs);
  for (const { input, key } of logins) {
    let epoch: number;
    try {
      const login = key.slice(key.indexOf(':') + 1); // the login's hash, as tokens bind it
      epoch = await deadlines.race(store.bumpEpoch(deviceEpochKey(login), DEVICE_EPOCH_KEEP_MS));
    } catch (error) {
      const done =
        revoked.length === 0
          ? 'none revoked'
          : `revoked before it: ${revoked.map((r) => r.input).join(', ')}`;
      throw storeError(
        error instanceof StoreTimeoutError
          ? `Redis did not answer within ${options.timeoutMs} ms for ${input}; its devices may or ` +
              `may not have been revoked (${done}); run the command again`
          : `Redis failed for ${input}: ${(error as Error).message} (${done})`,
      );
    }
    revoked.push({ input, key, epoch });
  }
  const count = `${revoked.length} login${revoked.length === 1 ? '' : 's'}`;
  return {
    json: { revoked, keptMs: DEVICE_EPOCH_KEEP_MS },
    text:
      `revoked the trusted devices of ${count} (epochs kept ${formatWindow(DEVICE_EPOCH_KEEP_MS)}):\n` +
      columns(
        revoked.map(({ input, key, epoch }) => [input, key, `epoch ${epoch}`]),
        '  ',
      ),
  };
}
