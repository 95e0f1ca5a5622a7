import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { keySecretApp } from './key-secret.app';

describe.each(PLATFORMS)('the keySecret warning on %s', (platform) => {
  let app: RunningApp | undefined;
  const nodeEnv = process.env.NODE_ENV;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    process.env.NODE_ENV = nodeEnv;
  });

  const warnings = () => app!.logs.filter((line) => /warn: .*keySecret/.test(line));

  it('in production, @Attempt without keySecret warns once at startup, saying what the hash does not hide', async () => {
    process.env.NODE_ENV = 'production';
    app = await startApp(keySecretApp('attempt'), platform);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(/plain SHA-256/);
    expect(warnings()[0]).toMatch(/REDLIMIT_KEY_SECRET/);
    await app.request('/sign-in', { method: 'POST', body: { email: 'ada@example.com' } });
    expect(warnings()).toHaveLength(1);
  });

  it('in production, an API-key layer without keySecret warns too', async () => {
    process.env.NODE_ENV = 'production';
    app = await startApp(keySecretApp('apiKey'), platform);
    expect(warnings()).toHaveLength(1);
  });

  it('no warning with a keySecret, outside production, or without identity hashing', async () => {
    process.env.NODE_ENV = 'production';
    app = await startApp(
      keySecretApp('attempt', { keySecret: 'a secret of at least 16 characters' }),
      platform,
    );
    expect(warnings()).toEqual([]);
    await app.close();
    app = await startApp(keySecretApp('ipOnly'), platform);
    expect(warnings()).toEqual([]);
    await app.close();
    process.env.NODE_ENV = 'development';
    app = await startApp(keySecretApp('attempt'), platform);
    expect(warnings()).toEqual([]);
  });
});
