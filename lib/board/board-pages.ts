import type { PolicyOverride } from '../core/overrides';
import { formatWait, formatWindow } from '../core/format.util';
import type { Limiter } from '../core/limiter';
import {
  type AuditEntry,
  BOARD_OUTCOMES,
  type BoardLockout,
  type BoardOutcome,
  type BoardRefusal,
  type PolicyCard,
  RATE_BUCKET_MS,
  type RateCount,
} from '../stores/board-book';
import { html, type Html, isoTime, join, postForm, table } from './board-html.util';
import { isShortenedKey } from './board-recorder';

/** What the pages need besides their figures. */
export interface PageContext {
  /** The board's path, for links and forms. */
  readonly base: string;
  /** The CSRF token forms carry. */
  readonly csrf: string;
  /** Whether actions are hidden. */
  readonly readOnly: boolean;
  /** The store's clock (ms since 1970). */
  readonly now: number;
  /** Policies this board can act on (peek, unlock), by name. */
  readonly actionable: ReadonlySet<string>;
  /** Of those, the policies that can grant room (every algorithm but `concurrency`). */
  readonly grantable: ReadonlySet<string>;
  /** Whether overrides can be set and removed from here (the store keeps live limits). */
  readonly overridable?: boolean;
}

/** Minutes of rates the Policies page draws. */
export const RATE_MINUTES = 15;

/**
 * A caller key as text anyone can compare: control, format (bidi overrides, zero-width) and
 * line-separator characters shown as `\u{…}`, the whole isolated from the text around it.
 */
export function keyHtml(key: string): Html {
  const shown = key.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
  return html`<bdi class="key">${shown}</bdi>`;
}

/** A policy's limits as `10/15m + 100/1d`, with a bucket's burst. */
export function limitsText(card: PolicyCard): string {
  const limits = card.limits.map(({ limit, windowMs }) => `${limit}/${formatWindow(windowMs)}`);
  return limits.join(' + ') + (card.burst !== undefined ? ` (burst ${card.burst})` : '');
}

function blockText(card: PolicyCard): string {
  const block = card.block;
  if (!block) return '';
  if (block.durationMs === 0) return 'honours lockouts';
  const growth = block.factor > 1 ? ` ×${block.factor} up to ${formatWindow(block.maxMs)}` : '';
  return `${formatWindow(block.durationMs)}${growth}${block.restart ? ', restart' : ''}`;
}

/** The Policies page: each policy, its settings and its fleet-wide rates. */
export function policiesPage(
  cards: readonly PolicyCard[],
  rates: readonly RateCount[],
  ctx: PageContext,
  overrides: readonly PolicyOverride[] = [],
): Html {
  const from = ctx.now - (ctx.now % RATE_BUCKET_MS) - (RATE_MINUTES * 60_000 - RATE_BUCKET_MS);
  const buckets = (RATE_MINUTES * 60_000) / RATE_BUCKET_MS;
  const rows = cards.map((card) => {
    const series = new Map<BoardOutcome, number[]>();
    for (const outcome of BOARD_OUTCOMES) series.set(outcome, new Array<number>(buckets).fill(0));
    for (const rate of rates) {
      if (rate.policy !== card.name) continue;
      const index = Math.floor((rate.at - from) / RATE_BUCKET_MS);
      const line = series.get(rate.outcome);
      if (line && index >= 0 && index < buckets) line[index]! += rate.count;
    }
    // Per second over the last minute (the six latest buckets, the current one partial).
    const perSecond = (outcome: BoardOutcome) => {
      const line = series.get(outcome)!;
      const sum = line.slice(-6).reduce((a, b) => a + b, 0);
      return sum / 60;
    };
    const tags = join([
      card.shadow ? html` <span class="tag shadow">shadow</span>` : html``,
      card.block ? html` <span class="tag block">block ${blockText(card)}</span>` : html``,
    ]);
    return [
      html`<strong>${card.name}</strong>${tags}`,
      card.algorithm,
      limitsText(card),
      card.failMode,
      join(
        BOARD_OUTCOMES.map(
          (outcome) =>
            html`<div class="${outcome}">${outcome} ${rateText(perSecond(outcome))}/s</div>`,
        ),
      ),
      sparkline(series),
    ];
  });
  return join([
    table(
      ['policy', 'algorithm', 'limits', 'fail mode', 'last minute', `last ${RATE_MINUTES} min`],
      rows,
    ),
    html`<p class="legend">
      ${BOARD_OUTCOMES.map((o) => html`<span class="${o}">■ ${o}</span>`)}
    </p>`,
    html`<p class="note">
      Fleet-wide decisions per 10 s, as the apps' board recorders report them every 2 s: the latest
      few seconds may still be missing; a recorder that could not write loses those seconds (it
      warns). Policies come from the apps running them (published every 30 s).
    </p>`,
    html`<h2>Live overrides</h2>`,
    table(
      ['policy', 'for', 'change', 'when', 'version', 'by', 'why', ''],
      overrides.map((o) => [
        o.policy,
        o.scope === '' ? 'every key' : keyHtml(o.scope),
        JSON.stringify(o.change),
        overrideWhen(o, ctx.now),
        `v${o.version}`,
        o.actor,
        o.reason ?? '',
        ctx.readOnly || !ctx.overridable || !ctx.actionable.has(o.policy)
          ? ''
          : postForm(
              ctx.base,
              'override-clear',
              ctx.csrf,
              { policy: o.policy, scope64: key64(o.scope) },
              'Remove',
              {
                confirm: `Remove this override of ${o.policy}? The configured policy applies again.`,
              },
            ),
      ]),
    ),
    ctx.readOnly || !ctx.overridable ? html`` : overrideForm(ctx),
    html`<p class="note">
      Changes of policies kept in the store, applied by every app within its poll (<code
        >redlimit policies set|unset|history</code
      >; the limits above are the apps' own).
    </p>`,
  ]);
}

/** The form that sets an override from the Policies page (a limit and / or shadow mode). */
function overrideForm(ctx: PageContext): Html {
  const policies = [...ctx.actionable].sort();
  return html`<form
    method="post"
    action="${ctx.base}/override"
    class="override"
    data-confirm="Change this policy for every app of the fleet?"
  >
    <input type="hidden" name="csrf" value="${ctx.csrf}" />
    <label
      >policy
      <select name="policy">
        ${policies.map((p) => html`<option value="${p}">${p}</option>`)}
      </select></label
    >
    <label
      >for keys starting <input name="scope" maxlength="512" placeholder="(every key)"
    /></label>
    <label>limit <input type="number" name="limit" min="1" step="1" class="units" /></label>
    <label
      >shadow
      <select name="shadow">
        <option value="">unchanged</option>
        <option value="on">on</option>
        <option value="off">off</option>
      </select></label
    >
    <label
      >for
      <select name="until">
        <option value="1h">1 hour</option>
        <option value="15m">15 minutes</option>
        <option value="4h">4 hours</option>
        <option value="1d">1 day</option>
        <option value="7d">7 days</option>
        <option value="">until removed</option>
      </select></label
    >
    <label>why <input name="reason" maxlength="512" /></label>
    <button type="submit">Set override</button>
  </form>`;
}

/** When an override is in force, as the Policies page says it. */
function overrideWhen(o: PolicyOverride, now: number): string {
  if (o.from !== undefined && now < o.from) return `from ${isoTime(o.from)}`;
  if (o.until !== undefined) return `until ${isoTime(o.until)} (${formatWait(o.until - now)})`;
  return 'in force';
}

function rateText(perSecond: number): string {
  if (perSecond === 0) return '0';
  if (perSecond < 0.1) return perSecond.toFixed(3);
  return perSecond < 10 ? perSecond.toFixed(1) : String(Math.round(perSecond));
}

/** Small lines of the counts per bucket, one per outcome, on one scale. */
function sparkline(series: ReadonlyMap<BoardOutcome, readonly number[]>): Html {
  const width = 240;
  const height = 40;
  let max = 1;
  for (const line of series.values()) for (const v of line) max = Math.max(max, v);
  const lines = [...series].map(([outcome, line]) => {
    if (line.every((v) => v === 0)) return html``;
    const step = width / Math.max(1, line.length - 1);
    const points = line
      .map(
        (v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`,
      )
      .join(' ');
    return html`<polyline class="${outcome}" points="${points}"></polyline>`;
  });
  return html`<svg
    class="spark"
    viewBox="0 0 ${width} ${height}"
    role="img"
    aria-label="decisions per 10 s, peak ${max}"
  >
    <line class="base" x1="0" y1="${height - 1}" x2="${width}" y2="${height - 1}"></line>
    ${lines}
  </svg>`;
}

/** The look-up box: an identity hashed as the app hashes it, or a key as stored. */
export function lookupForm(ctx: PageContext, parts: readonly string[]): Html {
  return html`<form method="post" action="${ctx.base}/key" class="lookup">
      <input type="hidden" name="csrf" value="${ctx.csrf}" />
      <label
        >Find
        <select name="part">
          ${parts.map((p) => html`<option value="${p}">${p}</option>`)}
          <option value="key">key as stored</option>
        </select></label
      >
      <input
        type="text"
        name="value"
        placeholder="alice@example.com, 203.0.113.7, …"
        autocomplete="off"
        required
      />
      <button type="submit">Look up</button>
    </form>
    <p class="note">
      The value is sent in the request body and hashed here as the app hashes it (with its key
      secret when it has one); it never appears in a URL.
    </p>`;
}

/** Buttons of a key's row: view it, and unlock it (not in read-only mode). */
function keyActions(ctx: PageContext, policy: string, key: string): Html {
  if (isShortenedKey(key)) return html`<span class="note">shortened: too long to act on</span>`;
  // Keys travel in forms as base64url: a browser rewrites line breaks in form fields.
  const view = postForm(ctx.base, 'key', ctx.csrf, { part: 'key64', value: key64(key) }, 'View');
  if (ctx.readOnly || !ctx.actionable.has(policy)) return view;
  return join([view, unlockForm(ctx, policy, key)]);
}

/** The Unlock button of a key under a policy. */
function unlockForm(ctx: PageContext, policy: string, key: string): Html {
  return postForm(ctx.base, 'unlock', ctx.csrf, { policy, key64: key64(key) }, 'Unlock', {
    confirm: `Reset ${policy} for this key? Its budget is full again and any lockout ends.`,
  });
}

/** The Grant form of a key under a policy: units of room now (see `Limiter.grant`). */
function grantForm(ctx: PageContext, policy: string, key: string): Html {
  return html`<form
    method="post"
    action="${ctx.base}/grant"
    class="inline"
    data-confirm="${`Grant room under ${policy} to this key now? It can spend that many more units at once.`}"
  >
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input
      type="hidden"
      name="policy"
      value="${policy}"
    /><input type="hidden" name="key64" value="${key64(key)}" /><label
      >units
      <input
        type="number"
        name="units"
        min="1"
        max="999999999"
        step="1"
        value="1"
        required
        class="units" /></label
    ><button type="submit">Grant</button>
  </form>`;
}

/** A key as a form carries it (base64url of its UTF-8). */
export function key64(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** Refusals per policy (the Refusing now and Shadow pages). */
export function refusalsPage(
  refusals: readonly BoardRefusal[],
  policies: readonly string[],
  minutes: number,
  ctx: PageContext,
  parts: readonly string[],
  shadow: boolean,
): Html {
  const choices = [1, 5, 15, 30].map((m) =>
    m === minutes
      ? html`<strong>${m} min</strong>`
      : html`<a href="${ctx.base}/${shadow ? 'shadow' : 'refusing'}?minutes=${m}">${m} min</a>`,
  );
  const sections = policies.map((policy) => {
    const rows = refusals
      .filter((r) => r.policy === policy)
      .map((r) => [
        keyHtml(r.key),
        html`<span class="num">${r.count}</span>`,
        r.limit === 0 ? 'lockout' : `${r.limit}/${formatWindow(r.windowMs)}`,
        keyActions(ctx, policy, r.key),
      ]);
    return html`<h2>${policy}</h2>
      ${table(['key', shadow ? 'would have refused' : 'refused', 'refusing limit', ''], rows)}`;
  });
  return join([
    shadow ? html`` : lookupForm(ctx, parts),
    html`<p>Over the last ${join(choices, html` · `)}, fleet-wide, most first.</p>`,
    policies.length === 0
      ? html`<p class="empty">${shadow ? 'No policy is in shadow mode.' : 'No policy yet.'}</p>`
      : join(sections),
    html`<p class="note">
      Counts of refusals per key (the key that refused), summed from what each app saw; each app
      lists at most 5,000 keys per 2 s and the store keeps the 1,000 keys refused most per policy
      and minute, so keys refused only a few times in a wide attack may be missing.
    </p>`,
  ]);
}

/** The Locked out page: current lockouts, soonest end first. */
export function lockoutsPage(
  lockouts: readonly BoardLockout[],
  cards: ReadonlyMap<string, PolicyCard>,
  ctx: PageContext,
  shown = Infinity,
): Html {
  const more = lockouts.length > shown;
  const rows = lockouts
    .slice(0, shown)
    .map((lockout) => [
      lockout.policy,
      keyHtml(lockout.key),
      levelText(lockout, cards.get(lockout.policy)),
      html`${isoTime(lockout.until)}<br /><span class="note"
          >in ${formatWait(lockout.until - ctx.now)}</span
        >`,
      isoTime(lockout.since),
      keyActions(ctx, lockout.policy, lockout.key),
    ]);
  return join([
    more
      ? html`<p class="notice error">
          Showing the ${shown} lockouts ending soonest: more are running (look a key up to see it).
        </p>`
      : html``,
    table(['policy', 'key', 'level', 'until', 'first seen', ''], rows),
    html`<p class="note">
      Lockouts the fleet's apps saw start or refuse, from the store; the level is read from the
      lockout's length (duration × factor<sup>level − 1</sup>). An unlock from a board takes the
      lockout off this list; one from code or <code>redlimit reset</code> ends the lockout at once
      but shows here until it would have ended (a key's page, a live peek, is always right).
    </p>`,
  ]);
}

function levelText(lockout: BoardLockout, card: PolicyCard | undefined): string {
  const block = card?.block;
  if (!block || block.durationMs <= 0) return '';
  const length = lockout.until - lockout.since;
  if (block.factor <= 1) return '1';
  const level =
    Math.round(
      Math.log(Math.max(length, block.durationMs) / block.durationMs) / Math.log(block.factor),
    ) + 1;
  return String(Math.max(1, level));
}

/** One key under each policy, as a peek sees it now. */
export interface KeyState {
  /** The policy. */
  readonly policy: string;
  /** The caller key. */
  readonly key: string;
  /** What a peek says, or why it could not. */
  readonly state:
    | {
        readonly allowed: boolean;
        readonly remaining: number;
        readonly limit: number;
        readonly windowMs: number;
        readonly retryAfterMs: number;
        readonly blockedUntil?: number;
        /** A bucket's size (token bucket, GCRA): what `remaining` is out of. */
        readonly capacity?: number;
      }
    | { readonly error: string };
}

/** The A key page: the look-up box, then each key found under each policy. */
export function keyPage(
  keys: readonly string[],
  states: readonly KeyState[],
  ctx: PageContext,
  parts: readonly string[],
  notice?: { readonly text: string; readonly error?: boolean },
): Html {
  const sections = keys.map((key) => {
    const rows = states
      .filter((s) => s.key === key)
      .map((s) => {
        const state = s.state;
        if ('error' in state)
          return [s.policy, html`<span class="failed">${state.error}</span>`, ''];
        const window = formatWindow(state.windowMs);
        const left =
          state.capacity !== undefined
            ? `${state.remaining} of ${state.capacity} left (refills ${state.limit} per ${window})`
            : `${state.remaining} of ${state.limit} per ${window} left`;
        const status =
          state.blockedUntil !== undefined
            ? html`<span class="blocked"
                >locked out until ${isoTime(state.blockedUntil)}
                (${formatWait(state.blockedUntil - ctx.now)})</span
              >`
            : state.allowed
              ? html`<span class="allowed">${left}</span>`
              : html`<span class="refused"
                  >${left}; next in ${formatWait(state.retryAfterMs)}</span
                >`;
        const unlock =
          ctx.readOnly || !ctx.actionable.has(s.policy) || isShortenedKey(key)
            ? html``
            : ctx.grantable.has(s.policy)
              ? join([unlockForm(ctx, s.policy, key), grantForm(ctx, s.policy, key)])
              : unlockForm(ctx, s.policy, key);

        return [s.policy, status, unlock];
      });
    return html`<h2>${keyHtml(key)}</h2>
      ${table(['policy', 'now', ''], rows)}`;
  });
  return join([
    notice
      ? html`<p class="notice${notice.error ? ' error' : ''}" role="status">${notice.text}</p>`
      : html``,
    lookupForm(ctx, parts),
    keys.length === 0 && notice === undefined
      ? html`<p class="note">Look up an identity, or choose View on a key of another page.</p>`
      : join(sections),
  ]);
}

/** The Audit page: actions taken from the board and the CLI, newest first. */
export function auditPage(entries: readonly AuditEntry[]): Html {
  const rows = entries.map((e) => [
    isoTime(e.at),
    e.actor,
    e.action,
    e.via,
    e.policy ?? '',
    e.key !== undefined ? keyHtml(e.key) : '',
    e.detail ?? '',
  ]);
  return join([
    table(['when', 'who', 'what', 'from', 'policy', 'key', ''], rows),
    html`<p class="note">
      Kept in the store (the latest 10,000 entries, 90 days after the last one); each action is also
      a decision event (operation <code>reset</code> or <code>grant</code>).
    </p>`,
  ]);
}

/** The limiters by policy name. */
export function byName(limiters: readonly Limiter[]): Map<string, Limiter> {
  return new Map(limiters.map((l) => [l.policy.name, l]));
}
