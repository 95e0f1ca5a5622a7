/**
 * Redis Cluster: per slot, the turn of the latest operation that has not yet sent its part there
 * (or, for a cross-slot spend, not yet finished: it charges slot group by slot group and
 * compensates when a later group refuses). Operations issued after it on a shared slot wait for
 * that turn, so each slot sees issue order and no tentative charge of this store's own calls.
 */
export class SlotTurns {
  private readonly turns = new Map<number, Promise<void>>();

  /**
   * Claims `slot` for one part of an operation. `before` (absent when nothing waits) settles once
   * every operation issued earlier on that slot is done with it; call `release` once this one is
   * (again is harmless).
   */
  claim(slot: number): { before?: Promise<void>; release: () => void } {
    const before = this.turns.get(slot);
    let done!: () => void;
    const turn = new Promise<void>((resolve) => (done = resolve));
    this.turns.set(slot, turn);
    const release = () => {
      if (this.turns.get(slot) === turn) this.turns.delete(slot);
      done();
    };
    return before ? { before, release } : { release };
  }

  /**
   * Runs `send` (which sends every part synchronously, before its first await) once every part
   * issued earlier on these slots has been sent: at once when none waits.
   */
  whenFree<T>(
    groups: ReadonlyArray<readonly [number, unknown]>,
    send: () => Promise<T>,
  ): Promise<T> {
    const claims = groups.map(([slot]) => this.claim(slot));
    const sendNow = () => {
      try {
        return send();
      } finally {
        for (const claim of claims) claim.release();
      }
    };
    const waits = claims.flatMap(({ before }) => (before ? [before] : []));
    return waits.length === 0 ? sendNow() : Promise.all(waits).then(sendNow);
  }
}
