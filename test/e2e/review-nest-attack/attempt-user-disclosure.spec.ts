/**
 * Adversarial review 3: an @Attempt keyed on 'user' for a signed-out caller charges 'user:-', a
 * budget every signed-out caller shares; its headers must not show one client the others' spends.
 */
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { attemptUserDisclosureApp } from './attempt-user-disclosure.app';

describe.each(PLATFORMS)(
  'review attack: @Attempt on an absent user discloses a shared budget on %s',
  (platform) => {
    let app: RunningApp;
    beforeEach(async () => {
      app = await startApp(attemptUserDisclosureApp(), platform);
    });
    afterEach(() => app.close());

    const post = (path: string, client: string) =>
      app.request(path, { method: 'POST', headers: { 'x-forwarded-for': client } });

    it.each(['/report', '/report-ip-user'])(
      "%s: after client A's three calls, client B's first response does not show them",
      async (path) => {
        for (let i = 0; i < 3; i++) expect((await post(path, '198.51.100.1')).status).toBe(201);
        const probe = await post(path, '203.0.113.9');
        expect(probe.status).toBe(201);
        // B has made one call: a header showing 1 left (5 - 4) tells B about A's three.
        expect({
          ratelimit: probe.headers.get('ratelimit'),
          remaining: probe.headers.get('x-ratelimit-remaining'),
        }).not.toEqual(expect.objectContaining({ remaining: '1' }));
        expect(probe.headers.get('ratelimit') ?? '').not.toMatch(/r=1\b/);
      },
    );
  },
);
