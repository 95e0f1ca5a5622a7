/**
 * Adversarial review 3: a concurrency lease is held while its response streams ("a streaming
 * response holds the lease until its last byte") — under @Attempt as under @Throttle.
 */
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { attemptLeaseStreamApp, type Gate, gate } from './attempt-lease-stream.app';

describe.each(PLATFORMS)(
  'review attack: concurrency leases of streaming @Res() handlers on %s',
  (platform) => {
    let app: RunningApp;
    let streams: Gate;
    beforeEach(async () => {
      streams = gate();
      app = await startApp(attemptLeaseStreamApp(streams), platform);
    });
    afterEach(async () => {
      streams.open();
      await app.close();
    });

    /** Opens `n` streams one after another (each answered once its headers arrive). */
    async function open(path: string, n: number): Promise<Response[]> {
      const responses: Response[] = [];
      for (let i = 0; i < n; i++) responses.push(await app.request(path));
      return responses;
    }

    async function finish(responses: Response[]): Promise<void> {
      streams.open();
      await Promise.all(responses.map((r) => r.text()));
    }

    it.each(['/stream/throttle', '/stream/attempt'])(
      '%s: five streams opened at limit 2 while the first are still streaming: 2 stream, 3 get 429',
      async (path) => {
        const responses = await open(path, 5);
        const seen = responses.map((r) => r.status);
        await finish(responses);
        expect(seen).toEqual([200, 200, 429, 429, 429]);
      },
    );
  },
);
