/**
 * The ops board over HTTP on Express and Fastify, on a MemoryStore and on Redis: authorisation,
 * pages, the look-up (a POST: no identity in a URL), unlock with its CSRF token and audit entry,
 * read-only mode. The browser specs (test/browser/board.spec.ts) drive the same board in Chromium.
 */
import type { Redis } from 'ioredis';
import {
  attemptKey,
  LimiterRegistry,
  MemoryStore,
  RedisStore,
  type Store,
} from '../../../lib/nest';
import { RedlimitBoard } from '../../../lib/nest/board/redlimit-board.service';
import { createTestClient, uniquePrefix } from '../../support/redis';
import { PLATFORMS, type RunningApp, startApp } from '../support/app';
import { boardApp, OPS_HEADER, OPS_TOKEN } from './board.app';

const SECRET = 'a-key-secret-of-the-test-app';
const OPS = { [OPS_HEADER]: OPS_TOKEN, 'x-ops-user': 'ada' };

type StoreKind = 'memory' | 'redis';

describe.each(PLATFORMS)('ops board on %s', (platform) => {
  describe.each<StoreKind>(['memory', 'redis'])('with a %s store', (kind) => {
    let client: Redis | undefined;
    let store: Store;
    let running: RunningApp;

    beforeAll(async () => {
      if (kind === 'redis') {
        client = createTestClient();
        store = new RedisStore({ client, prefix: uniquePrefix('board') });
      } else {
        store = new MemoryStore();
      }
      running = await startApp(boardApp(store), platform);
    });

    afterAll(async () => {
      await running.close();
      await client?.quit();
    });

    /** A GET of a board page with the operator's header; the CSRF cookie and token it carries. */
    async function page(
      route = '',
    ): Promise<{ status: number; body: string; cookie?: string; csrf?: string }> {
      const response = await running.request(`/ops/limits${route}`, { headers: OPS });
      const body = await response.text();
      const setCookie = response.headers.get('set-cookie') ?? undefined;
      const cookie = setCookie?.split(';')[0];
      const csrf = /name="csrf" value="([^"]+)"/.exec(body)?.[1];
      return { status: response.status, body, ...(cookie && { cookie }), ...(csrf && { csrf }) };
    }

    function post(route: string, fields: Record<string, string>, headers: Record<string, string>) {
      return fetch(`${running.url}/ops/limits/${route}`, {
        method: 'POST',
        headers: { ...OPS, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(fields).toString(),
      });
    }

    async function failLogins(email: string, times: number): Promise<number[]> {
      const codes: number[] = [];
      for (let i = 0; i < times; i++) {
        const response = await running.request('/login', {
          method: 'POST',
          body: { email, password: 'wrong' },
        });
        codes.push(response.status);
      }
      return codes;
    }

    async function flush(): Promise<void> {
      await running.app.get(RedlimitBoard).flush();
    }

    it('answers 403 without authorisation, for pages, assets and actions', async () => {
      for (const path of ['', '/refusing', '/locked', '/audit', '/assets/board.css']) {
        expect((await running.request(`/ops/limits${path}`)).status).toBe(403);
      }
      const unlock = await running.request('/ops/limits/unlock', {
        method: 'POST',
        body: { policy: 'login', key: 'email:x' },
      });
      expect(unlock.status).toBe(403);
    });

    it('lists the policies with their settings', async () => {
      const { status, body } = await page();
      expect(status).toBe(200);
      expect(body).toContain('<strong>login</strong>');
      expect(body).toContain('3/15m');
      expect(body).toContain('block 10m ×2');
      expect(body).toContain('<strong>preview</strong> <span class="tag shadow">shadow</span>');
    });

    it('shows a locked-out key, and unlocks it with a POST carrying the CSRF token', async () => {
      const email = `locked-${platform}-${kind}@example.com`;
      const key = attemptKey('email', email, SECRET);
      expect(await failLogins(email, 5)).toEqual([201, 201, 201, 429, 429]);
      await flush();

      const locked = await page('/locked');
      expect(locked.body).toContain(key);
      const refusing = await page('/refusing');
      expect(refusing.body).toContain(key);

      // Without the cookie, or with another token: refused, nothing reset.
      const noCookie = await post('unlock', { policy: 'login', key, csrf: locked.csrf! }, {});
      expect(noCookie.status).toBe(403);
      const wrong = await post(
        'unlock',
        { policy: 'login', key, csrf: 'x'.repeat(43) },
        { cookie: locked.cookie! },
      );
      expect(wrong.status).toBe(403);
      const crossSite = await post(
        'unlock',
        { policy: 'login', key, csrf: locked.csrf! },
        { cookie: locked.cookie!, 'sec-fetch-site': 'cross-site' },
      );
      expect(crossSite.status).toBe(403);
      expect(await failLogins(email, 1)).toEqual([429]);

      const unlocked = await post(
        'unlock',
        { policy: 'login', key, csrf: locked.csrf! },
        { cookie: locked.cookie! },
      );
      expect(unlocked.status).toBe(200);
      expect(await unlocked.text()).toContain('Unlocked login for this key');
      expect(await failLogins(email, 1)).toEqual([201]);

      const audit = await page('/audit');
      expect(audit.body).toContain('ada');
      expect(audit.body).toContain(key);
      expect(audit.body).toMatch(/<td>unlock<\/td>/);
    });

    it('grants a one-off allowance from a key’s page (a POST with units), audited', async () => {
      const email = `grant-${platform}-${kind}@example.com`;
      const key = attemptKey('email', email, SECRET);
      expect(await failLogins(email, 2)).toEqual([201, 201]); // (a third would lock it out)
      const { cookie, csrf } = await page('/key');
      const viewed = await post(
        'key',
        { part: 'key', value: key, csrf: csrf! },
        { cookie: cookie! },
      );
      const view = await viewed.text();
      expect(view).toContain(`action="/ops/limits/grant"`);
      expect(view).toContain('name="units"');
      expect(view).toContain('1 of 3 per 15m left');
      expect((await running.request('/ops/limits/grant', { headers: OPS })).status).toBe(405);

      for (const units of ['0', '-1', '1.5', 'two', '']) {
        const refused = await post(
          'grant',
          { policy: 'login', key, units, csrf: csrf! },
          { cookie: cookie! },
        );
        expect(await refused.text()).toContain('Give the units to grant as a whole number');
      }
      const noToken = await post('grant', { policy: 'login', key, units: '2', csrf: csrf! }, {});
      expect(noToken.status).toBe(403);

      const granted = await post(
        'grant',
        { policy: 'login', key, units: '1', csrf: csrf! },
        { cookie: cookie! },
      );
      expect(granted.status).toBe(200);
      const after = await granted.text();
      expect(after).toContain('Granted 1 unit of room under login to this key');
      expect(after).toContain('2 of 3 per 15m left');
      const audit = await page('/audit');
      expect(audit.body).toMatch(/<td>grant<\/td>/);
      expect(audit.body).toContain('<td>1 unit</td>');
    });

    it('finds a key from an email typed in the look-up box (POST), hashed as the app does', async () => {
      const email = `Lookup-${platform}-${kind}@Example.com`;
      await failLogins(email, 4);
      const { cookie, csrf } = await page('/key');
      const response = await post(
        'key',
        { part: 'email', value: ` ${email} `, csrf: csrf! },
        { cookie: cookie! },
      );
      const body = await response.text();
      expect(response.status).toBe(200);
      expect(body).toContain(attemptKey('email', email, SECRET));
      expect(body).toMatch(/locked out until/);
      expect(body).not.toContain(email.trim());
    });

    it('counts a shadow policy’s refusals on the Shadow page, and refuses no one', async () => {
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await running.request('/preview')).status);
      expect(codes).toEqual([200, 200, 200]);
      await flush();
      const shadow = await page('/shadow');
      expect(shadow.body).toContain('<h2>preview</h2>');
      expect(shadow.body).toMatch(/ip:127\.0\.0\.1/);
    });

    it('lists the live overrides on the Policies page', async () => {
      const registry = running.app.get(LimiterRegistry);
      await registry.override('search', { limit: 5 }, { scope: 'ip:', reason: 'a <test>' });
      try {
        const { body } = await page();
        expect(body).toContain('<h2>Live overrides</h2>');
        expect(body).toContain('<td>{&#34;limit&#34;:5}</td>');
        expect(body).toContain('<td>a &#60;test&#62;</td>');
      } finally {
        await registry.clearOverride('search', { scope: 'ip:' });
      }
    });

    it('sets and removes a live override from the Policies page (POSTs with the CSRF token), audited', async () => {
      const registry = running.app.get(LimiterRegistry);
      const { body, cookie, csrf } = await page();
      expect(body).toContain(`action="/ops/limits/override"`);
      const bad = await post(
        'override',
        { policy: 'search', scope: '', limit: '0', csrf: csrf! },
        { cookie: cookie! },
      );
      expect(await bad.text()).toContain('Give the limit as a whole number of at least 1.');
      const unknown = await post(
        'override',
        { policy: 'nope', limit: '3', csrf: csrf! },
        { cookie: cookie! },
      );
      expect(await unknown.text()).toContain('cannot change policy &#39;nope&#39;');
      expect((await registry.listOverrides()).length).toBe(0);

      const set = await post(
        'override',
        { policy: 'search', scope: 'ip:', limit: '7', until: '1h', reason: 'launch', csrf: csrf! },
        { cookie: cookie! },
      );
      expect(set.status).toBe(200);
      expect(await set.text()).toContain(
        'Set: search for keys starting &#34;ip:&#34; {&#34;limit&#34;:7}',
      );
      const [stored] = await registry.listOverrides();
      expect(stored).toMatchObject({
        policy: 'search',
        scope: 'ip:',
        change: { limit: 7 },
        actor: 'ada',
        reason: 'launch',
      });
      // An hour from the board's estimate of the store clock (`at` is the store's own stamp).
      expect(Math.abs(stored!.until! - stored!.at - 3_600_000)).toBeLessThan(60_000);

      const cleared = await post(
        'override-clear',
        { policy: 'search', scope64: Buffer.from('ip:').toString('base64url'), csrf: csrf! },
        { cookie: cookie! },
      );
      expect(await cleared.text()).toContain(
        'Removed the override of search for keys starting &#34;ip:&#34;',
      );
      expect(await registry.listOverrides()).toEqual([]);
      const audit = await page('/audit');
      expect(audit.body).toMatch(/<td>override<\/td>/);
      expect(audit.body).toMatch(/<td>override-clear<\/td>/);
    });

    it('draws each policy’s rates once the recorder has written them', async () => {
      await running.request('/search');
      await flush();
      const { body } = await page();
      expect(body).toMatch(/<polyline class="allowed"/);
    });
  });

  it('hides and refuses actions in read-only mode', async () => {
    const store = new MemoryStore();
    const running = await startApp(boardApp(store, { readOnly: true }), platform);
    try {
      const response = await running.request('/ops/limits/locked', { headers: OPS });
      const body = await response.text();
      expect(body).toContain('read-only');
      const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(body)?.[1] ?? cookie.split('=')[1]!;
      const unlock = await fetch(`${running.url}/ops/limits/unlock`, {
        method: 'POST',
        headers: { ...OPS, cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ policy: 'login', key: 'email:x', csrf }).toString(),
      });
      expect(unlock.status).toBe(403);
      expect(body).not.toContain('>Unlock<');
      const grant = await fetch(`${running.url}/ops/limits/grant`, {
        method: 'POST',
        headers: { ...OPS, cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ policy: 'login', key: 'email:x', units: '1', csrf }).toString(),
      });
      expect(grant.status).toBe(403);
      const override = await fetch(`${running.url}/ops/limits/override`, {
        method: 'POST',
        headers: { ...OPS, cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ policy: 'login', limit: '99', csrf }).toString(),
      });
      expect(override.status).toBe(403);
      const policies = await (await running.request('/ops/limits', { headers: OPS })).text();
      expect(policies).not.toContain('/ops/limits/override"');
    } finally {
      await running.close();
    }
  });
});
