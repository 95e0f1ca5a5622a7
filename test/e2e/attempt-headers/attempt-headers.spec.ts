import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { Attempt } from '../../../lib/nest';
import { attemptHeadersApp } from './attempt-headers.app';

describe.each(PLATFORMS)(
  'headers of an @Attempt route under the global guard on %s',
  (platform) => {
    let app: RunningApp;
    afterEach(() => app.close());

    const signIn = () =>
      app.request('/sign-in-all', { method: 'POST', body: { email: 'ada@example.com' } });

    it("IETF headers list the guard's default policy and the attempt's policy", async () => {
      app = await startApp(attemptHeadersApp('ietf'), platform);
      const first = await signIn();
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60, "login";q=2;w=3600');
      expect(first.headers.get('ratelimit')).toBe('"api";r=4;t=60, "login";r=1;t=3600');
      expect((await signIn()).status).toBe(200);

      const refused = await signIn();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('3600');
      expect(refused.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60, "login";q=2;w=3600');
      expect(refused.headers.get('ratelimit')).toBe('"api";r=2;t=60, "login";r=0;t=3600');
    });

    it('legacy headers describe the layer with the least left, and the refusing one on a refusal', async () => {
      app = await startApp(attemptHeadersApp('legacy'), platform);
      const first = await signIn();
      expect(first.headers.get('x-ratelimit-limit')).toBe('2');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
      expect(first.headers.get('x-ratelimit-reset')).toBe('3600');
      expect(first.headers.get('ratelimit')).toBeNull();
      await signIn();
      const refused = await signIn();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-ratelimit-limit')).toBe('2');
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(refused.headers.get('x-ratelimit-reset')).toBe('3600');

      // The guard's default layer has less left than the attempt's roomy policy: it is shown.
      const roomy = await app.request('/roomy', {
        method: 'POST',
        body: { email: 'ada@example.com' },
      });
      expect(roomy.status).toBe(200);
      expect(roomy.headers.get('x-ratelimit-limit')).toBe('5');
      expect(roomy.headers.get('x-ratelimit-remaining')).toBe('4'); // its own route's budget
      expect(roomy.headers.get('x-ratelimit-reset')).toBe('60');
    });

    it("'both': the IETF fields list every layer, the legacy ones describe one", async () => {
      app = await startApp(attemptHeadersApp('both'), platform);
      const roomy = await app.request('/roomy', {
        method: 'POST',
        body: { email: 'ada@example.com' },
      });
      expect(roomy.headers.get('ratelimit')).toBe('"api";r=4;t=60, "roomy";r=9;t=3600');
      expect(roomy.headers.get('x-ratelimit-remaining')).toBe('4');
      expect(roomy.headers.get('x-ratelimit-limit')).toBe('5');
    });
  },
);

describe.each(PLATFORMS)(
  'headers of an @Attempt route never disclose a budget shared with others, on %s',
  (platform) => {
    let app: RunningApp;
    afterEach(() => app.close());

    const signIn = (email: string, path = '/sign-in') =>
      app.request(path, { method: 'POST', body: { email } });

    it("an account's failures are not shown to whoever names it: only the requester's own layers, and Retry-After on a refusal", async () => {
      app = await startApp(attemptHeadersApp('both'), platform);
      await signIn('grace@example.com'); // two failures for grace
      await signIn('grace@example.com');
      // Anyone naming grace (here: the next request) learns nothing of her budget from headers.
      const probe = await signIn('grace@example.com');
      expect(probe.status).toBe(429);
      expect(probe.headers.get('retry-after')).toBe('3600');
      expect(probe.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60');
      expect(probe.headers.get('ratelimit')).not.toMatch(/login/);
      expect(probe.headers.get('x-ratelimit-limit')).toBe('5'); // the guard's per-route, per-IP layer
      const unknown = await signIn('nobody@example.com');
      expect(unknown.headers.get('ratelimit')).not.toMatch(/login/);
      expect(unknown.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60');
    });

    it("an attempt keyed on the requester alone ('ip') shows its budget", async () => {
      app = await startApp(attemptHeadersApp('ietf'), platform);
      const first = await app.request('/ip-only', { method: 'POST' });
      expect(first.headers.get('ratelimit')).toBe('"api";r=4;t=60, "login";r=1;t=3600');
    });

    it("headers: 'all' opts back in", async () => {
      app = await startApp(attemptHeadersApp('ietf'), platform);
      const first = await signIn('grace@example.com', '/sign-in-all');
      expect(first.headers.get('ratelimit')).toBe('"api";r=4;t=60, "login";r=1;t=3600');
    });

    it('refuses an unknown headers value, naming it', () => {
      expect(() => Attempt(['ip'], { headers: 'some' as 'all' })).toThrow(
        /@Attempt\(\) headers must be 'requester' or 'all'/,
      );
    });
  },
);
