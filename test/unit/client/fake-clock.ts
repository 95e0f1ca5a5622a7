/** A controllable clock for the retry specs: `sleep` records the wait and moves `now` on. */
export interface FakeClock {
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Every wait asked of `sleep`, in order. */
  readonly waits: number[];
  /** Moves time on without a wait (e.g. a slow response). */
  advance(ms: number): void;
}

export const EPOCH_MS = Date.parse('2025-03-01T12:00:00Z');

export function fakeClock(startMs = EPOCH_MS): FakeClock {
  let nowMs = startMs;
  const waits: number[] = [];
  return {
    now: () => nowMs,
    sleep: (ms) => {
      waits.push(ms);
      nowMs += ms;
      return Promise.resolve();
    },
    waits,
    advance: (ms) => {
      nowMs += ms;
    },
  };
}

/** A response-like value, as axios or any client would give it. */
export function refusal(status: number, headers: Record<string, string> = {}) {
  return { status, headers };
}
