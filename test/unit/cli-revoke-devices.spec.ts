import { parseCliArgs } from '../../lib/cli/cli-args.util';
import { cliConfig } from '../../lib/cli/cli-config.util';
import { loginKeys } from '../../lib/cli/cli-keys.util';
import { CliError, EXIT_CODES } from '../../lib/cli/cli.error';
import { type EpochStore, revokeDevicesCommand } from '../../lib/cli/revoke-devices.command';
import { MemoryStore } from '../../lib';
import { attemptKey } from '../../lib/nest';

const SECRET = 'a secret of at least 16 characters';
const DAY_MS = 86_400_000;

/** What `fn` threw, as the CliError it must be. */
function cliErrorOf(fn: () => unknown): CliError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return error as CliError;
  }
  throw new Error('expected a CliError, nothing was thrown');
}

describe('redlimit revoke-devices', () => {
  const env = { REDLIMIT_KEY_SECRET: SECRET };
  const logins = (argv: string[], environment: Record<string, string> = env) => {
    const args = parseCliArgs(['revoke-devices', ...argv]);
    return loginKeys(args, cliConfig(args, environment));
  };

  it('takes logins right after the command, no policy', () => {
    expect(parseCliArgs(['revoke-devices', 'email=a@example.com', 'user=42'])).toMatchObject({
      command: 'revoke-devices',
      parts: ['email=a@example.com', 'user=42'],
    });
    expect(parseCliArgs(['revoke-devices', 'email=a@example.com']).policy).toBeUndefined();
  });

  it('names a login as RedlimitDevices.revokeAll does: normalised, hashed with the key secret', () => {
    const hashed = attemptKey('email', 'ada@example.com', SECRET);
    expect(logins(['email= ＡＤＡ@Example.com '])).toEqual([
      { input: 'email= ＡＤＡ@Example.com ', key: hashed },
    ]);
    expect(logins(['token=Tok', '--exact']).map((k) => k.key)).toEqual([
      attemptKey('token', 'Tok', SECRET, { normalize: false }),
    ]);
    expect(logins(['--key', hashed])).toEqual([{ input: `--key ${hashed}`, key: hashed }]);
    // Without the secret, other hashes: the app's own keySecret must be in the environment.
    expect(logins(['email=ada@example.com'], {})[0]!.key).not.toBe(hashed);
  });

  it.each([
    [[], /needs at least one login/],
    [['login', 'email=a@example.com'], /bad login 'login'.*takes no policy name/],
    [['ip=203.0.113.7'], /'ip' is not a login/],
    [['apiKey=sk_live_1'], /'apiKey' is not a login/],
    [['headers.x-user=ada'], /name the part by its key name.*x-user=…, not headers\.x-user=…/],
    [['e mail=ada'], /'e mail' is not a part's key name/],
    [['email='], /bad login 'email=': empty value/],
    [['email=\u200b'], /empty value/], // nothing left once normalised: '<part>:-'
    [['--key', 'email:-'], /--key 'email:-' is not a login key/],
    [['--key', 'email:alice@example.com'], /is not a login key: expected <part>:<hash>/],
    [['--key', `ip:${'a'.repeat(22)}`], /'ip' is not a login/],
    [['--key', `device:${'a'.repeat(22)}`], /'device' is not a login/],
    [['--route', 'AuthController.signIn /sign-in', '--ip', '203.0.113.7'], /--route and --ip/],
  ])('refuses %j: exit 2', (argv, pattern) => {
    const error = cliErrorOf(() => logins(argv));
    expect(error.exitCode).toBe(EXIT_CODES.usage);
    expect(error.message).toMatch(pattern);
  });

  it('bumps each login’s device epoch for the lifetime, and says so', async () => {
    const store = new MemoryStore();
    const bump = jest.spyOn(store, 'bumpEpoch');
    const ada = attemptKey('email', 'ada@example.com', SECRET);
    const bob = attemptKey('email', 'bob@example.com', SECRET);
    const keys = [
      { input: 'email=ada@example.com', key: ada },
      { input: `--key ${bob}`, key: bob },
    ];
    const output = await revokeDevicesCommand(store, keys, { timeoutMs: 1000 });
    // Tokens bind the login's hash (not the part's name); kept 366 days, the longest ttl.
    const login = (key: string) => `devices:${key.slice('email:'.length)}`;
    expect(bump.mock.calls).toEqual([
      [login(ada), 366 * DAY_MS],
      [login(bob), 366 * DAY_MS],
    ]);
    expect((await store.readEpoch(login(ada), DAY_MS)).epoch).toBe(1);
    expect(output.json).toEqual({
      revoked: [
        { input: 'email=ada@example.com', key: ada, epoch: 1 },
        { input: `--key ${bob}`, key: bob, epoch: 1 },
      ],
      keptMs: 366 * DAY_MS,
    });
    expect(output.text).toBe(
      'revoked the trusted devices of 2 logins (epochs kept 366d):\n' +
        `  email=ada@example.com${' '.repeat(bob.length + 6 - 21)}  ${ada}  epoch 1\n` +
        `  --key ${bob}  ${bob}  epoch 1`,
    );
  });

  it('a failure stops there: exit 3, naming the logins revoked before it', async () => {
    const store = new MemoryStore();
    const failing: EpochStore = {
      bumpEpoch: (key, keepMs) =>
        key.includes('bob')
          ? Promise.reject(new Error('READONLY replica'))
          : store.bumpEpoch(key, keepMs),
    };
    const keys = ['ada', 'bob', 'cy'].map((name) => ({
      input: `email=${name}`,
      key: `email:${name}`,
    }));
    const error = await revokeDevicesCommand(failing, keys, { timeoutMs: 1000 }).catch(
      (e: unknown) => e as CliError,
    );
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ exitCode: EXIT_CODES.store });
    expect((error as CliError).message).toBe(
      'Redis failed for email=bob: READONLY replica (revoked before it: email=ada)',
    );
    expect((await store.readEpoch('devices:ada', DAY_MS)).epoch).toBe(1);
    expect((await store.readEpoch('devices:cy', DAY_MS)).epoch).toBe(0); // never reached
  });

  describe('a store that never answers', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('exits 3 once timeoutMs has passed, saying the revocation may have happened', async () => {
      const hung: EpochStore = { bumpEpoch: () => new Promise<number>(() => undefined) };
      const outcome = revokeDevicesCommand(hung, [{ input: 'email=ada', key: 'email:ada' }], {
        timeoutMs: 300,
      }).catch((e: unknown) => e as CliError);
      let settled = false;
      void outcome.then(() => (settled = true));
      await jest.advanceTimersByTimeAsync(299);
      expect(settled).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(settled).toBe(true);
      const error = (await outcome) as CliError;
      expect(error).toMatchObject({ exitCode: EXIT_CODES.store });
      expect(error.message).toMatch(
        /^Redis did not answer within 300 ms for email=ada; its devices may or may not have been revoked \(none revoked\)/,
      );
    });
  });
});
