import type { ClientPort } from './clients/client-port';
import { type ScriptId, scriptLibrary } from './scripts';

/** A call that did not run and goes again once the runner has recovered. */
interface Retry {
  readonly seq: number;
  /** Sends it again (`true`), or fails it with this error. */
  readonly go: (error?: Error) => void;
}

/** While the runner recovers from calls that did not run (see {@link ScriptRunner}). */
interface Recovery {
  /** Settled once the library is loaded (or functions turned out to be unavailable). */
  ready: boolean;
  /** Why the library could not be loaded, for the calls waiting on it. */
  error?: Error;
  readonly retries: Retry[];
  /** Calls issued during the recovery, in issue order. */
  readonly held: Array<() => void>;
  /** The latest send (by sequence) that took effect while calls before it waited to go again. */
  latestSuccess: number;
}

/** Most times one call is sent again after it did not run. */
const MAX_RESENDS = 3;

/**
 * Runs redlimit's scripts on one client, as Redis Functions (`FCALL`) where the server allows it,
 * else as scripts (`EVALSHA`).
 *
 * Functions: the library (every script of this version, see {@link scriptLibrary}) is loaded with
 * `FUNCTION LOAD` the first time a call finds it missing (a new server, a restart without
 * persistence, `FUNCTION FLUSH`), on every master of a Cluster. Functions survive `SCRIPT FLUSH`,
 * are replicated, and are persisted with the data.
 *
 * Scripts: when the server does not know `FUNCTION`/`FCALL` or the user may not run them (an ACL
 * without them), every call from then on is an `EVALSHA`, sent again as `EVAL` when Redis answers
 * `NOSCRIPT`. A call refused before it ran because Redis is out of memory (a function registered
 * without flags is refused before it runs, even a peek; a script only at its first write) is sent
 * again as a script.
 *
 * Order: a call that did not run (its function missing or not permitted, or refused for memory)
 * goes again only once the library is loaded and every call sent before the miss has answered;
 * calls issued meanwhile wait. Then the calls that did not run go again in the order they were
 * first sent, then the waiting ones in issue order. A call that did not run while a call sent
 * after it took effect (another process loaded the library in between) fails with its error
 * instead: going again would put it after a later call.
 */
export class ScriptRunner {
  private readonly library = scriptLibrary();
  /** Functions turned out to be unavailable: scripts from now on. */
  private scripts = false;
  private nextSeq = 0;
  /** Sends not answered yet. */
  private inFlight = 0;
  private recovery?: Recovery;

  constructor(private readonly client: ClientPort) {}

  /** Runs script `id` with these KEYS and ARGV; resolves to its reply. */
  run(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    const recovery = this.recovery;
    if (recovery) {
      return new Promise((resolve, reject) =>
        recovery.held.push(() => void this.run(id, keys, args).then(resolve, reject)),
      );
    }
    return this.dispatch(id, keys, args, 0, false);
  }

  private dispatch(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
    resends: number,
    asScript: boolean,
  ): Promise<unknown> {
    const seq = this.nextSeq++;
    this.inFlight++;
    const sent =
      asScript || this.scripts ? this.evalsha(id, keys, args) : this.fcall(id, keys, args);
    return sent.then(
      (reply) => {
        this.inFlight--;
        if (this.recovery) {
          this.recovery.latestSuccess = Math.max(this.recovery.latestSuccess, seq);
          this.settle();
        }
        return reply;
      },
      (error: unknown) => {
        this.inFlight--;
        const notRun = didNotRun(error, this.scripts || asScript);
        if (!notRun || resends >= MAX_RESENDS) {
          this.settle();
          return explainScriptError(error);
        }
        return new Promise<unknown>((resolve, reject) => {
          const recovery = this.recover(notRun);
          recovery.retries.push({
            seq,
            go: (failed) => {
              if (failed) reject(failed);
              else {
                const script = notRun === 'memory';
                this.dispatch(id, keys, args, resends + 1, script).then(resolve, reject);
              }
            },
          });
          this.settle();
        });
      },
    );
  }

  /** The recovery under way, or a new one for calls that did not run for `why`. */
  private recover(why: 'missing' | 'denied' | 'memory'): Recovery {
    let recovery = this.recovery;
    if (recovery === undefined) {
      recovery = this.recovery = { ready: false, retries: [], held: [], latestSuccess: -1 };
      const current = recovery;
      const loaded = why === 'missing' && !this.scripts ? this.load() : Promise.resolve();
      if (why === 'denied') this.scripts = true;
      loaded.then(
        () => {
          current.ready = true;
          this.settle();
        },
        (error: unknown) => {
          current.ready = true;
          current.error = error instanceof Error ? error : new Error(String(error));
          this.settle();
        },
      );
    } else if (why === 'denied') {
      this.scripts = true;
    }
    return recovery;
  }

  /** Ends the recovery once the library is ready and every call sent before has answered. */
  private settle(): void {
    const recovery = this.recovery;
    if (!recovery?.ready || this.inFlight > 0) return;
    this.recovery = undefined;
    const retries = recovery.retries.sort((a, b) => a.seq - b.seq);
    for (const { seq, go } of retries) {
      if (recovery.error) go(recovery.error);
      else if (recovery.latestSuccess > seq) {
        go(
          new Error(
            'redlimit: the call did not run, and a call sent after it took effect meanwhile ' +
              '(another process loaded the function library); it is not sent again, to keep ' +
              'issue order',
          ),
        );
      } else go();
    }
    for (const send of recovery.held) send();
  }

  private fcall(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    return this.client.fcall(this.library.functionName(id), keys, args);
  }

  /** `FUNCTION LOAD` on the server, or on every master of a Cluster; switches to scripts if denied. */
  private async load(): Promise<void> {
    try {
      const masters = await this.client.masters();
      await Promise.all(
        masters.map((send) =>
          send(['function', 'load', this.library.source]).catch((error: unknown) => {
            if (!isAlreadyLoaded(error)) throw error;
          }),
        ),
      );
    } catch (error) {
      if (!isFunctionUnavailable(error)) throw error;
      this.scripts = true;
    }
  }

  /** A script by SHA, sent again as EVAL when Redis answers NOSCRIPT (see {@link ClientPort}). */
  private evalsha(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    const name = `redlimit_${id.replace(/[-/]/g, '_')}`;
    const lua = this.library.evalSource(id);
    return this.client.evalScript({ name, lua }, keys, args).catch(explainScriptError);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Why a call did not run at all, or undefined: its function was missing, functions are not
 * known or not permitted, or Redis refused it for memory before it ran (a function is refused
 * before it runs; within a script the message names the script).
 */
function didNotRun(error: unknown, scripts: boolean): 'missing' | 'denied' | 'memory' | undefined {
  const message = messageOf(error);
  if (/^ERR Function not found/i.test(message)) return 'missing';
  if (isFunctionUnavailable(error)) return 'denied';
  if (!scripts && /^OOM /.test(message) && !/script:/.test(message)) return 'memory';
  return undefined;
}

function isAlreadyLoaded(error: unknown): boolean {
  return /already exists/i.test(messageOf(error));
}

/** Functions are not there (before Redis 7.0) or not permitted (ACL) for FCALL or FUNCTION. */
function isFunctionUnavailable(error: unknown): boolean {
  const message = messageOf(error);
  return (
    /^NOPERM .*'(fcall|fcall_ro|function)[|' ]/i.test(message) ||
    (/unknown (redis )?command/i.test(message) && /'(fcall|function)'/i.test(message))
  );
}

/** Script errors a user can act on get a message that says what to do; others stay as they are. */
export function explainedError(error: unknown): unknown {
  const message = messageOf(error);
  if (/unknown (redis )?command/i.test(message) && /pexpiretime|script/i.test(message)) {
    return new Error(
      `redlimit needs Redis 7.0 or later (its scripts call PEXPIRETIME and SET … PXAT): ${message}`,
      { cause: error },
    );
  }
  return error;
}

/** Throws {@link explainedError} of a script's error. */
function explainScriptError(error: unknown): never {
  throw explainedError(error);
}
