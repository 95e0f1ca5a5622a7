import { randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalIp } from '../http/client-ip.util';
import { apiKeyHash, attemptKey } from '../http/key-hash.util';
import { ipKey } from '../http/throttle-key.util';
import { StoreTimeoutError } from '../core/errors';
import type { Limiter } from '../core/limiter';
import type { PolicyChange } from '../core/overrides';
import { formatWait } from '../core/format.util';
import type { PolicyCard } from '../stores/board-book';
import { BOARD_CSS, BOARD_JS } from './board-assets';
import { html, type Html, join, page, type PageRoute, PAGES } from './board-html.util';
import {
  auditPage,
  byName,
  keyPage,
  type KeyState,
  lockoutsPage,
  type PageContext,
  policiesPage,
  RATE_MINUTES,
  refusalsPage,
} from './board-pages';
import { isShortenedKey, policyCard } from './board-recorder';
import type { BoardRequest, BoardResponse, BoardSource } from './board-request';

/** The CSRF cookie's name. */
export const CSRF_COOKIE = 'redlimit_board_csrf';
/** Identity parts the look-up box offers (hashed as `@Attempt` hashes them). */
export const LOOKUP_PARTS = ['email', 'ip', 'user', 'apiKey', 'phone', 'username'] as const;
/** Keys the look-up finds at most (direct forms and listed keys that end with them). */
const MAX_FOUND_KEYS = 10;
/** Algorithms whose budget is a bucket: what is left is out of its size (`burst`). */
const BUCKETS: ReadonlySet<string> = new Set(['token-bucket', 'gcra']);
/** Lockouts the Locked out page shows (it says when more are running). */
const LOCKOUTS_SHOWN = 500;
/** Longest value the look-up box or an action accepts. */
const MAX_FIELD = 4_096;

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; " +
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
} as const;

/** How a {@link BoardApp} behaves. */
export interface BoardAppOptions {
  /** Hides every action and refuses them with 403 (default false). */
  readonly readOnly?: boolean;
}

/**
 * The ops board itself, framework-free: a request in, a page out. `RedlimitBoardModule` serves it
 * from a Nest app (Express or Fastify), `redlimit board` from the CLI; both authorise the request
 * before it gets here. Reading is GET; every action (and the look-up, which carries an identity)
 * is a POST with a CSRF token (the double-submit cookie `redlimit_board_csrf`, HttpOnly and
 * SameSite=Strict) from a page of the same origin. No key or identity is ever in a URL.
 *
 * @example
 * const board = new BoardApp({ book: store.board(), limiters: () => [login], via: 'board' });
 * const response = await board.handle({ method: 'GET', route: '', base: '/ops', query: {}, headers: {}, secure: false, actor: 'ops' });
 */
export class BoardApp {
  private readonly readOnly: boolean;

  constructor(
    private readonly source: BoardSource,
    options: BoardAppOptions = {},
  ) {
    this.readOnly = options.readOnly === true;
  }

  /** Answers one request. Never rejects: a store that fails is a 503 page. */
  async handle(request: BoardRequest): Promise<BoardResponse> {
    try {
      return await this.route(request);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return this.plain(503, `The store did not answer: ${reason}`);
    }
  }

  private async route(request: BoardRequest): Promise<BoardResponse> {
    const { method, route } = request;
    // Another site's script (fetch, XHR, <script>, <img>) never reads the board, even where the
    // app opens CORS; following a link from elsewhere (a navigation) is fine.
    if (crossSiteRead(request.headers)) return this.plain(403, 'Cross-site request refused');
    if (route === 'assets/board.css') return this.asset('text/css', BOARD_CSS);
    if (route === 'assets/board.js') return this.asset('text/javascript', BOARD_JS);
    const action =
      route === 'unlock' || route === 'grant' || route === 'override' || route === 'override-clear';
    const known = PAGES.some(([r]) => r === route) || action;
    if (!known) return this.plain(404, 'No such page');
    if (method === 'POST') {
      if (route !== 'key' && !action) return this.plain(405, 'Not a form');
      return this.post(request, route);
    }
    if (method !== 'GET' && method !== 'HEAD') return this.plain(405, 'Method not allowed');
    if (route === 'unlock') return this.plain(405, 'Unlock is a POST');
    if (route === 'grant') return this.plain(405, 'Grant is a POST');
    if (route === 'override' || route === 'override-clear') {
      return this.plain(405, 'Changing an override is a POST');
    }
    return this.render(request, route as PageRoute, await this.pageOf(request, route as PageRoute));
  }

  private async pageOf(
    request: BoardRequest,
    route: PageRoute,
  ): Promise<{ title: string; content: Html }> {
    const ctx = this.context(request);
    const book = this.source.book;
    switch (route) {
      case '': {
        const [cards, rates, overrides] = await Promise.all([
          this.cards(),
          book.rates(ctx.now - RATE_MINUTES * 60_000),
          this.source.overrides?.() ?? Promise.resolve([]),
        ]);
        return { title: 'Policies', content: policiesPage(cards, rates, ctx, overrides) };
      }
      case 'refusing':
      case 'shadow': {
        const shadow = route === 'shadow';
        const minutes = minutesOf(request.query['minutes']);
        const cards = await this.cards();
        const names = cards.filter((c) => !shadow || c.shadow).map((c) => c.name);
        const rows = await book.topRefusals(shadow ? 'shadow' : 'refused', names, minutes, 10);
        const shown = shadow ? names : names.filter((n) => rows.some((r) => r.policy === n));
        return {
          title: shadow ? 'Shadow' : 'Refusing now',
          content: refusalsPage(rows, shown, minutes, ctx, LOOKUP_PARTS, shadow),
        };
      }
      case 'locked': {
        const [lockouts, cards] = await Promise.all([
          book.lockouts(LOCKOUTS_SHOWN + 1),
          this.cards(),
        ]);
        const byPolicy = new Map(cards.map((c) => [c.name, c]));
        return {
          title: 'Locked out',
          content: lockoutsPage(lockouts, byPolicy, ctx, LOCKOUTS_SHOWN),
        };
      }
      case 'key':
        return { title: 'A key', content: keyPage([], [], ctx, LOOKUP_PARTS) };
      case 'audit':
        return { title: 'Audit', content: auditPage(await book.audit(200)) };
    }
  }

  private async post(
    request: BoardRequest,
    route: 'key' | 'unlock' | 'grant' | 'override' | 'override-clear',
  ): Promise<BoardResponse> {
    if (!sameOrigin(request.headers)) return this.plain(403, 'Cross-site request refused');
    const cookie = cookieOf(request.headers, CSRF_COOKIE);
    const token = field(request.body, 'csrf');
    if (cookie === undefined || token === undefined || !equal(cookie, token)) {
      return this.plain(403, 'Missing or stale form token: reload the page and try again');
    }
    const ctx = this.context(request);
    if (route === 'key') {
      let part = field(request.body, 'part') ?? 'key';
      let value = field(request.body, 'value') ?? '';
      if (part === 'key64') {
        part = 'key';
        value = fromKey64(value) ?? '';
      }
      if (value.trim() === '' || value.length > MAX_FIELD) {
        return this.keyResponse(request, ctx, [], {
          text: 'Give a value to look up.',
          error: true,
        });
      }
      if (part !== 'key' && !(LOOKUP_PARTS as readonly string[]).includes(part)) {
        return this.keyResponse(request, ctx, [], { text: `Unknown part '${part}'.`, error: true });
      }
      return this.keyResponse(request, ctx, await this.find(part, value));
    }
    if (this.readOnly) return this.plain(403, 'The board is read-only');
    if (route === 'override' || route === 'override-clear') {
      return this.override(request, ctx, route === 'override-clear');
    }
    const policy = field(request.body, 'policy') ?? '';
    const encoded = field(request.body, 'key64');
    const key = (encoded !== undefined ? fromKey64(encoded) : field(request.body, 'key')) ?? '';
    const limiter = byName(this.source.limiters()).get(policy);
    if (limiter === undefined) {
      return this.keyResponse(request, ctx, key ? [key] : [], {
        text: `This board cannot act on policy '${policy}': it is not one of its app's.`,
        error: true,
      });
    }
    const verb = route === 'grant' ? 'grant room to' : 'unlock';
    if (key === '' || key.length > MAX_FIELD) {
      return this.keyResponse(request, ctx, [], { text: `No key to ${verb}.`, error: true });
    }
    if (isShortenedKey(key)) {
      return this.keyResponse(request, ctx, [], {
        text:
          route === 'grant'
            ? 'This key was shortened for the board: grant room with its full key (redlimit grant --key).'
            : 'This key was shortened for the board: unlock it with its full key (redlimit reset --key).',
        error: true,
      });
    }
    if (route === 'grant') return this.grant(request, ctx, limiter, key);
    await limiter.reset(key);
    await this.source.book.appendAudit({
      actor: request.actor,
      action: 'unlock',
      via: this.source.via,
      policy,
      key,
    });
    return this.keyResponse(request, ctx, [key], {
      text: `Unlocked ${policy} for this key: its budget is full and any lockout is over.`,
    });
  }

  /**
   * Sets or removes a live override from the Policies page (validated as a policy is), audited
   * here and in the overrides' own history; the page is shown again with what happened.
   */
  private async override(
    request: BoardRequest,
    ctx: PageContext,
    clear: boolean,
  ): Promise<BoardResponse> {
    const { setOverride, clearOverride } = this.source;
    const policy = field(request.body, 'policy') ?? '';
    // A typed scope comes as `scope`; one of a listed override as `scope64` (base64url, as keys).
    const scope64 = field(request.body, 'scope64');
    const scope =
      scope64 !== undefined ? (fromKey64(scope64) ?? '') : (field(request.body, 'scope') ?? '');
    const reason = (field(request.body, 'reason') ?? '').trim();
    const page = async (text: string, error = false) =>
      this.render(request, '', {
        title: 'Policies',
        content: join([
          html`<p class="notice${error ? ' error' : ''}" role="status">${text}</p>`,
          (await this.pageOf(request, '')).content,
        ]),
      });
    if (setOverride === undefined || clearOverride === undefined) {
      return page('This board cannot change policies: its store keeps no live limits.', true);
    }
    if (!byName(this.source.limiters()).has(policy)) {
      return page(`This board cannot change policy '${policy}': it is not one of its app's.`, true);
    }
    if (scope.length > MAX_FIELD || reason.length > 512) {
      return page('The scope or the reason is too long.', true);
    }
    const where = scope === '' ? 'every key' : `keys starting "${scope}"`;
    try {
      if (clear) {
        const removed = await clearOverride(policy, { scope, actor: request.actor });
        if (removed) {
          await this.source.book.appendAudit({
            actor: request.actor,
            action: 'override-clear',
            via: this.source.via,
            policy,
            detail: `for ${where}`,
          });
        }
        return page(
          removed
            ? `Removed the override of ${policy} for ${where}: the configured policy applies again (on every app within its poll).`
            : `${policy} had no override for ${where}.`,
        );
      }
      const change = changeFromForm(request.body);
      if (typeof change === 'string') return page(change, true);
      const until = UNTIL_CHOICES.get(field(request.body, 'until') ?? '');
      const stored = await setOverride(policy, change, {
        scope,
        ...(until !== undefined && { until: this.source.book.now() + until }),
        actor: request.actor,
        ...(reason !== '' && { reason }),
      });
      await this.source.book.appendAudit({
        actor: request.actor,
        action: 'override',
        via: this.source.via,
        policy,
        detail: `${JSON.stringify(change)} for ${where}${until !== undefined ? ` for ${formatWait(until)}` : ''}`,
      });
      return page(
        `Set: ${policy} for ${where} ${JSON.stringify(change)} (version ${stored.version}), in force on every app within its poll.`,
      );
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError)
        return page(error.message, true);
      throw error;
    }
  }

  /** A one-off allowance from a key's page: `units` of room now under one policy, audited. */
  private async grant(
    request: BoardRequest,
    ctx: PageContext,
    limiter: Limiter,
    key: string,
  ): Promise<BoardResponse> {
    const policy = limiter.policy.name;
    const text = field(request.body, 'units') ?? '';
    const units = /^[1-9]\d{0,8}$/.test(text) ? Number(text) : undefined;
    if (units === undefined) {
      return this.keyResponse(request, ctx, [key], {
        text: 'Give the units to grant as a whole number from 1 to 999,999,999.',
        error: true,
      });
    }
    if (!ctx.grantable.has(policy)) {
      return this.keyResponse(request, ctx, [key], {
        text: `Policy '${policy}' leases (concurrency): nothing to grant; a lease ends when released or at its window.`,
        error: true,
      });
    }
    try {
      await limiter.grant(key, units);
    } catch (error) {
      if (error instanceof StoreTimeoutError) {
        return this.keyResponse(request, ctx, [key], {
          text: 'The store did not answer in time: the grant may or may not have been applied (one that reached it late was not). Check the state below before granting again.',
          error: true,
        });
      }
      if (!(error instanceof RangeError)) throw error;
      return this.keyResponse(request, ctx, [key], { text: error.message, error: true });
    }
    await this.source.book.appendAudit({
      actor: request.actor,
      action: 'grant',
      via: this.source.via,
      policy,
      key,
      detail: `${units} unit${units === 1 ? '' : 's'}`,
    });
    return this.keyResponse(request, ctx, [key], {
      text: `Granted ${units} unit${units === 1 ? '' : 's'} of room under ${policy} to this key, now (never beyond a full budget; a lockout stays: unlock ends it).`,
    });
  }

  private async keyResponse(
    request: BoardRequest,
    ctx: PageContext,
    keys: readonly string[],
    notice?: { text: string; error?: boolean },
  ): Promise<BoardResponse> {
    const limiters = this.source.limiters();
    const states = await Promise.all(
      keys.flatMap((key) => limiters.map((limiter) => stateOf(limiter, key))),
    );
    const shown =
      keys.length === 0 && notice === undefined
        ? { text: 'No key found for that value.', error: true }
        : notice;
    return this.render(request, 'key', {
      title: 'A key',
      content: keyPage(keys, states, ctx, LOOKUP_PARTS, shown),
    });
  }

  /** The keys an identity has: as `@Attempt` keys it, and listed keys that end with its caller key. */
  private async find(part: string, value: string): Promise<string[]> {
    if (part === 'key') return [value];
    const { keySecret } = this.source;
    const direct: string[] = [];
    let suffix: string | undefined;
    if (part === 'ip') {
      if (canonicalIp(value) === undefined) return [];
      const ip = this.source.clientIp?.(value) ?? canonicalIp(value)!;
      direct.push(attemptKey('ip', ip, keySecret, { normalize: true }), ipKey(ip));
      suffix = ipKey(ip);
    } else if (part === 'apiKey') {
      suffix = `apiKey:${apiKeyHash(value, keySecret)}`;
      direct.push(suffix);
    } else {
      direct.push(attemptKey(part, value, keySecret));
    }
    const found = new Set(direct);
    if (suffix !== undefined) {
      const listed = await this.listedKeys();
      for (const key of listed) {
        if (found.size >= MAX_FOUND_KEYS) break;
        if (key.endsWith(`|${suffix}`)) found.add(key);
      }
    }
    return [...found];
  }

  /** Keys the board lists now: refused in the last 30 minutes, or locked out. */
  private async listedKeys(): Promise<Set<string>> {
    const names = (await this.cards()).map((c) => c.name);
    const [refused, shadow, lockouts] = await Promise.all([
      this.source.book.topRefusals('refused', names, 30, 1_000),
      this.source.book.topRefusals('shadow', names, 30, 1_000),
      this.source.book.lockouts(10_000),
    ]);
    return new Set([...refused, ...shadow, ...lockouts].map((r) => r.key));
  }

  /** This app's policies, then those other apps of the fleet published. */
  private async cards(): Promise<PolicyCard[]> {
    const own = this.source.limiters().map(policyCard);
    const names = new Set(own.map((c) => c.name));
    const published = (await this.source.book.cards()).filter((c) => !names.has(c.name));
    return [...own, ...published].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private context(request: BoardRequest): PageContext {
    return {
      base: request.base,
      csrf: csrfOf(request),
      readOnly: this.readOnly,
      now: this.source.book.now(),
      actionable: new Set(this.source.limiters().map((l) => l.policy.name)),
      overridable: this.source.setOverride !== undefined && this.source.clearOverride !== undefined,
      grantable: new Set(
        this.source
          .limiters()
          .filter((l) => l.policy.algorithm !== 'concurrency')
          .map((l) => l.policy.name),
      ),
    };
  }

  private render(
    request: BoardRequest,
    route: PageRoute,
    { title, content }: { title: string; content: Html },
  ): BoardResponse {
    const csrf = csrfOf(request);
    const body = page(
      {
        base: request.base,
        page: route,
        title,
        readOnly: this.readOnly,
        now: this.source.book.now(),
        refreshSeconds: route === 'key' || route === 'audit' ? 0 : 10,
      },
      content,
    );
    const headers: Record<string, string | string[]> = {
      'content-type': 'text/html; charset=utf-8',
      ...SECURITY_HEADERS,
    };
    if (cookieOf(request.headers, CSRF_COOKIE) !== csrf) {
      headers['set-cookie'] = [
        `${CSRF_COOKIE}=${csrf}; Path=${cookiePath(request.base)}; HttpOnly; SameSite=Strict` +
          (request.secure ? '; Secure' : ''),
      ];
    }
    return { status: 200, headers, body: request.method === 'HEAD' ? '' : body };
  }

  private asset(type: string, body: string): BoardResponse {
    return {
      status: 200,
      headers: {
        'content-type': `${type}; charset=utf-8`,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      },
      body,
    };
  }

  private plain(status: number, message: string): BoardResponse {
    return {
      status,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...SECURITY_HEADERS },
      body: `${message}\n`,
    };
  }
}

/** What a peek says about one key under one policy. */
async function stateOf(limiter: Limiter, key: string): Promise<KeyState> {
  const policy = limiter.policy.name;
  try {
    const decision = await limiter.peek(key);
    if (decision.failure) {
      return { policy, key, state: { error: `the store failed (${decision.failure.reason})` } };
    }
    return {
      policy,
      key,
      state: {
        allowed: decision.allowed,
        remaining: decision.allowed ? decision.remaining + 1 : decision.remaining,
        limit: decision.limit,
        windowMs: decision.windowMs,
        retryAfterMs: decision.retryAfterMs,
        ...(decision.blockedUntil !== undefined && { blockedUntil: decision.blockedUntil }),
        ...(BUCKETS.has(limiter.policy.algorithm) && {
          capacity:
            limiter.policy.limits.find(
              (rule) => rule.limit === decision.limit && rule.windowMs === decision.windowMs,
            )?.burst ?? decision.limit,
        }),
      },
    };
  } catch (error) {
    return {
      policy,
      key,
      state: { error: error instanceof Error ? error.message : String(error) },
    };
  }
}

/** The CSRF token: the request's cookie when it has a well-formed one, else a new one. */
function csrfOf(request: BoardRequest): string {
  const held = cookieOf(request.headers, CSRF_COOKIE);
  if (held !== undefined && /^[A-Za-z0-9_-]{43}$/.test(held)) return held;
  const memo = request as { csrfMinted?: string };
  return (memo.csrfMinted ??= randomBytes(32).toString('base64url'));
}

/** The CSRF cookie's path: the board's, when it is a plain path (else the whole site). */
function cookiePath(base: string): string {
  return /^(\/[A-Za-z0-9._~%-]+)+$/.test(base) ? base : '/';
}

/** Whether the browser says another site's page asks for this without navigating to it. */
function crossSiteRead(headers: BoardRequest['headers']): boolean {
  const site = header(headers, 'sec-fetch-site');
  if (site !== 'cross-site' && site !== 'same-site') return false;
  return header(headers, 'sec-fetch-mode') !== 'navigate';
}

/** Whether a POST comes from a page of the board's own origin (as far as the browser says). */
export function sameOrigin(headers: BoardRequest['headers']): boolean {
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = header(headers, 'origin');
  if (origin === undefined) return true; // not a browser's cross-site form (they send Origin)
  if (origin === 'null') return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  return host === header(headers, 'host') || host === header(headers, 'x-forwarded-host');
}

function header(headers: BoardRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A cookie's value from the Cookie header. */
export function cookieOf(headers: BoardRequest['headers'], name: string): string | undefined {
  const raw = headers['cookie'];
  const joined = Array.isArray(raw) ? raw.join('; ') : raw;
  if (!joined) return undefined;
  for (const pair of joined.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

function field(body: BoardRequest['body'], name: string): string | undefined {
  const value = body?.[name];
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  return undefined;
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A key a form carried as base64url (see `key64`), or undefined when it is not one. */
function fromKey64(value: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(value)) return undefined;
  const key = Buffer.from(value, 'base64url').toString('utf8');
  return Buffer.from(key, 'utf8').toString('base64url') === value ? key : undefined;
}

function minutesOf(value: string | undefined): number {
  const minutes = Number(value);
  return [1, 5, 15, 30].includes(minutes) ? minutes : 5;
}

/** How long an override set from the board lasts (the form's choices; '' for until removed). */
const UNTIL_CHOICES: ReadonlyMap<string, number> = new Map([
  ['15m', 15 * 60_000],
  ['1h', 3_600_000],
  ['4h', 4 * 3_600_000],
  ['1d', 86_400_000],
  ['7d', 7 * 86_400_000],
]);

/** The change the override form asks for, or a message saying what is wrong with it. */
function changeFromForm(body: BoardRequest['body']): PolicyChange | string {
  const change: { limit?: number; shadow?: boolean } = {};
  const limit = (field(body, 'limit') ?? '').trim();
  if (limit !== '') {
    if (!/^[1-9]\d{0,14}$/.test(limit)) return 'Give the limit as a whole number of at least 1.';
    change.limit = Number(limit);
  }
  const shadow = field(body, 'shadow') ?? '';
  if (shadow === 'on' || shadow === 'off') change.shadow = shadow === 'on';
  else if (shadow !== '') return `Unknown shadow choice '${shadow}'.`;
  if (Object.keys(change).length === 0) return 'Give a limit or a shadow mode to change.';
  return change;
}
