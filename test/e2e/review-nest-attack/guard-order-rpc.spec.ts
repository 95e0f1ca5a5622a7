/**
 * Adversarial review 3: the startup guard-order warning covers the handlers a guard can run
 * before redlimit on, microservice handlers of a (hybrid) app's controllers included.
 */
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { guardOrderRpcApp } from './guard-order-rpc.app';

describe.each(PLATFORMS)(
  'review attack: guard-order check and @MessagePattern handlers on %s',
  (platform) => {
    let app: RunningApp;
    beforeEach(async () => {
      app = await startApp(guardOrderRpcApp(), platform);
    });
    afterEach(() => app.close());

    const warnings = () => app.logs.filter((line) => line.startsWith('warn:'));

    it('warns for the HTTP @Attempt route (control)', () => {
      expect(
        warnings().some((w) => w.includes('before @Attempt on AccountsController.httpSignIn')),
      ).toBe(true);
    });

    it('warns for the @MessagePattern @Attempt handler with a guard of its own', () => {
      expect(warnings().some((w) => w.includes('AccountsController.rpcSignIn'))).toBe(true);
    });

    it('warns for the @MessagePattern handler whose guard runs before RedlimitGuard', () => {
      expect(warnings().some((w) => w.includes('AccountsController.rpcLookup'))).toBe(true);
    });
  },
);
