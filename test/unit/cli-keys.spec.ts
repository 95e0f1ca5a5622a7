import { parseCliArgs } from '../../lib/cli/cli-args.util';
import { cliConfig } from '../../lib/cli/cli-config.util';
import { callerKeys } from '../../lib/cli/cli-keys.util';
import { attemptKey } from '../../lib/nest';

describe('redlimit caller keys', () => {
  const config = (argv: string[]) => cliConfig(parseCliArgs(argv), {});
  const keysOf = (argv: string[]) => callerKeys(parseCliArgs(argv), config(argv)).map((k) => k.key);

  it('part=value is normalised as @Attempt does; --exact hashes it as typed (normalize: false)', () => {
    expect(keysOf(['peek', 'login', 'email=ＡＤＡ@example.com'])).toEqual([
      attemptKey('email', 'ada@example.com'),
    ]);
    expect(keysOf(['peek', 'login', 'token=Tok', '--exact'])).toEqual([
      attemptKey('token', 'Tok', undefined, { normalize: false }),
    ]);
    expect(keysOf(['peek', 'login', 'token=Tok', '--exact'])).not.toEqual(
      keysOf(['peek', 'login', 'token=tok', '--exact']),
    );
  });

  it("--route names the handler: 'Controller.method /template'", () => {
    expect(
      keysOf([
        'peek',
        'links',
        '--route',
        'LinksController.create /links',
        '--ip',
        '::ffff:203.0.113.7',
      ]),
    ).toEqual(['LinksController.create /links|ip:203.0.113.7']);
  });
});
