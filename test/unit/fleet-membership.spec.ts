// A fleet member beats every `fleetBeatMs` on its own timer: the interval used to be the default
// (5 s) whatever the option said, while an announcement lasts three beats of the option, so with
// a short `fleetBeatMs` every announcement lapsed between beats, each beat joined the fleet again,
// and no process ever became established (the fallback refused every call during an outage).
import { type FleetBeat, FleetMembership } from '../../lib/stores/fleet';

describe('FleetMembership', () => {
  afterEach(() => jest.useRealTimers());

  it('beats every beatMs on its own timer, and is established after one interval', async () => {
    jest.useFakeTimers();
    const beats: number[] = [];
    const members = new Map<string, number>(); // member → lapses at (fake ms)
    const send = (member: string, ttlMs: number): Promise<FleetBeat> => {
      const now = Date.now();
      beats.push(now);
      for (const [m, until] of members) if (until <= now) members.delete(m);
      const joined = !members.has(member);
      members.set(member, now + ttlMs);
      return Promise.resolve({ size: members.size, rank: 0, now, joined, oldestOther: -1 });
    };
    const membership = new FleetMembership(send, () => Promise.resolve(), 200, 600);
    membership.start();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(beats.length).toBeGreaterThanOrEqual(5);
    expect(membership.current?.established).toBe(true);
    await membership.leave();
  });
});
