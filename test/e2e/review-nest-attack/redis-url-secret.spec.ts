/**
 * Adversarial review 3: the startup log masks a Redis URL's password; ioredis also takes the
 * password from the URL's query (`?password=`), which the log prints as given.
 */
import { startRedisServer, type StartedRedisServer } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { redisUrlSecretApp } from './redis-url-secret.app';

const PASSWORD = 'review3-query-s3cret';

describe.each(PLATFORMS)('review attack: a Redis password in the URL query on %s', (platform) => {
  let server: StartedRedisServer;
  let app: RunningApp;
  beforeAll(async () => {
    server = await startRedisServer(['--requirepass', PASSWORD]);
  });
  afterAll(() => server.stop());
  afterEach(() => app.close());

  it('works with the password, and no log line carries it', async () => {
    app = await startApp(
      redisUrlSecretApp(`redis://127.0.0.1:${server.port}/?password=${PASSWORD}`),
      platform,
    );
    expect((await app.request('/ping')).status).toBe(200); // the password is used
    expect(app.logs.filter((line) => line.includes(PASSWORD))).toEqual([]);
  });
});
