/**
 * The end of this event-loop turn (one check-phase callback), shared by every store and client
 * port of this process, in two phases: first the sends (the decisions the coalescers queued, see
 * {@link Coalescer}), then the releases of the writes a client held during the turn (see
 * `IoredisPort`). So whatever a turn sends to one node, queued or sent at once, leaves in one
 * socket write.
 */
type Task = () => void;

const sends: Task[] = [];
const releases: Task[] = [];
let scheduled = false;

/** Runs `task` at the end of this turn: a `send` before every `release`. */
export function atTurnEnd(phase: 'send' | 'release', task: Task): void {
  (phase === 'send' ? sends : releases).push(task);
  if (!scheduled) {
    scheduled = true;
    setImmediate(endTurn);
  }
}

function endTurn(): void {
  scheduled = false;
  let failed = false;
  let failure: unknown;
  // A send may hold writes (adding a release) or queue another send: both lists are read live.
  for (const list of [sends, releases]) {
    for (let i = 0; i < list.length; i++) {
      try {
        list[i]!();
      } catch (error) {
        if (!failed) [failed, failure] = [true, error];
      }
    }
    list.length = 0;
  }
  // Every task ran, every held write was released; the first failure surfaces as before.
  if (failed) throw failure;
}
