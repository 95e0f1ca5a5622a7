import { type MemoryAlgorithm, later } from './memory-algorithm';

/** Counts of window `window` (cur) and of the one before it (prev). */
interface SlidingWindowState {
  readonly window: number;
  readonly cur: number;
  readonly prev: number;
}

/** Sliding window (weighted two-window counter) in memory; mirrors `lua/sliding-window/*.lua`. */
export const slidingWindowMemory: MemoryAlgorithm<SlidingWindowState> = {
  owns(value): value is SlidingWindowState {
    return typeof value === 'object' && value !== null && 'cur' in value && 'prev' in value;
  },

  evaluate(state, { limit, windowMs }, { cost, now }) {
    const w = Math.floor(now / windowMs);
    const elapsed = now - w * windowMs;
    let cur = 0;
    let prev = 0;
    if (state && state.window > w) return later(state.window * windowMs);
    if (state?.window === w) {
      cur = state.cur;
      prev = state.prev;
    } else if (state?.window === w - 1) {
      prev = state.cur;
    }
    const weighted = prev * (windowMs - elapsed);
    const fits = weighted + (cur + cost) * windowMs <= limit * windowMs;
    return {
      fits,
      room: Math.floor((limit * windowMs - weighted) / windowMs) - cur,
      waitMs: fits ? 0 : waitFor(cur, prev, limit, windowMs, elapsed, cost),
      resetMs(spent) {
        if (spent || cur > 0) return 2 * windowMs - elapsed;
        return prev > 0 ? windowMs - elapsed : 0;
      },
      next: () => ({
        state: { window: w, cur: cur + cost, prev },
        expiresAt: (w + 2) * windowMs,
      }),
    };
  },

  refund(state, { windowMs }, { cost, at, now }) {
    const charged = Math.floor(at / windowMs);
    if (Math.floor(now / windowMs) > charged + 1) return undefined; // it no longer weighs on anything
    let { cur, prev } = state;
    if (state.window === charged && cur > 0) cur -= Math.min(cost, cur);
    else if (state.window === charged + 1 && prev > 0) prev -= Math.min(cost, prev);
    else return undefined;
    if (cur === 0 && prev === 0) return null;
    return { state: { window: state.window, cur, prev }, expiresAt: (state.window + 2) * windowMs };
  },

  grant(state, { limit, windowMs }, { cost, now }) {
    const w = Math.floor(now / windowMs);
    let cur: number;
    let prev: number;
    if (state.window === w - 1)
      [cur, prev] = [0, state.cur]; // as a decision reads it
    else if (state.window === w) ({ cur, prev } = state);
    else return undefined; // nothing weighs any more (or a later window's: the clock stepped back)
    const weight = windowMs - (now - w * windowMs);
    // The room wanted: what a decision sees now, `cost` more (see lua/sliding-window/refund.lua).
    const target = Math.floor((limit * windowMs - prev * weight) / windowMs) - cur + cost;
    const fromCur = Math.min(cost, cur);
    const left = cur - fromCur;
    const fromPrev =
      fromCur < cost && prev > 0
        ? Math.max(
            0,
            Math.min(
              prev,
              Math.ceil(((target + left - limit) * windowMs + prev * weight) / weight),
            ),
          )
        : 0;
    if (fromCur === 0 && fromPrev === 0) return undefined;
    cur -= fromCur;
    prev -= fromPrev;
    if (cur === 0 && prev === 0) return null;
    // The expiry kept: the stored window's.
    return { state: { window: w, cur, prev }, expiresAt: (state.window + 2) * windowMs };
  },

  charge(state, { windowMs }, { cost, at, now }) {
    const charged = Math.floor(at / windowMs);
    const w = Math.floor(now / windowMs);
    if (w > charged + 1) return undefined; // that window no longer weighs on anything
    // No state (refunded to nothing since): as of the current window.
    const from = state ?? { window: w, cur: 0, prev: 0 };
    const { window } = from;
    let { cur, prev } = from;
    if (window === charged) cur += cost;
    else if (window === charged + 1) prev += cost;
    else return undefined;
    return { state: { window, cur, prev }, expiresAt: (window + 2) * windowMs };
  },
};

/** Earliest wait until `cost` fits; same closed form as the Lua script. */
function waitFor(
  cur: number,
  prev: number,
  limit: number,
  windowMs: number,
  elapsed: number,
  cost: number,
): number {
  const room = limit - cur - cost;
  if (room >= 0 && prev > 0) {
    const at = windowMs - Math.floor((room * windowMs) / prev);
    if (at <= windowMs - 1) return at - elapsed;
  }
  const at = cur > 0 ? Math.max(0, windowMs - Math.floor(((limit - cost) * windowMs) / cur)) : 0;
  return windowMs - elapsed + at;
}
