import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { guardOrderApp } from './guard-order.app';

describe.each(PLATFORMS)('guard order warnings on %s', (platform) => {
  let app: RunningApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const warnings = () => app!.logs.filter((line) => /warn: .*runs before/.test(line));

  it('a guard bound before RedlimitGuard on a @Throttle route: warned once at startup, naming the route and the guard', async () => {
    app = await startApp(guardOrderApp(['authBeforeThrottle']), platform);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/CredentialsGuard runs before RedlimitGuard/);
    expect(warnings()[0]).toMatch(/AuthBeforeThrottleController\.login \(POST \/before\/login\)/);
    await app.request('/before/login', { method: 'POST' });
    expect(warnings()).toHaveLength(1);
  });

  it('a controller guard runs before a handler’s RedlimitGuard: warned', async () => {
    app = await startApp(guardOrderApp(['classAuthMethodThrottle']), platform);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/ClassAuthMethodThrottleController\.login/);
  });

  it('a global guard registered before a global RedlimitGuard: warned for the @Throttle routes', async () => {
    app = await startApp(
      guardOrderApp(['attemptPlain', 'throttleBeforeAuth'], ['auth', 'redlimit']),
      platform,
    );
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/ThrottleBeforeAuthController\.login/);
  });

  it('a guard on an @Attempt route runs before its spend: warned, saying where to check credentials', async () => {
    app = await startApp(guardOrderApp(['attemptGuarded']), platform);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/CredentialsGuard runs before @Attempt/);
    expect(warnings()[0]).toMatch(/AttemptGuardedController\.login/);
    expect(warnings()[0]).toMatch(/in the handler/);
  });

  it('no warning: RedlimitGuard first, @Attempt without guards, guards on routes redlimit does not limit', async () => {
    app = await startApp(
      guardOrderApp(['throttleBeforeAuth', 'attemptPlain', 'unthrottled'], ['redlimit', 'auth']),
      platform,
    );
    expect(warnings()).toEqual([]);
  });
});
