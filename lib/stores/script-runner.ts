import type { Cluster, Redis } from 'ioredis';
import { type ScriptId, scriptLibrary } from './scripts';

/** An ioredis client: a single `Redis` connection or a `Cluster`. */
type Client = Redis | Cluster;

type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/**
 * Runs redlimit's scripts on one client, as Redis Functions (`FCALL`) where the server allows it,
 * else as scripts (`EVALSHA`).
 *
 * Functions: the library (every script of this version, see {@link scriptLibrary}) is loaded with
 * `FUNCTION LOAD` the first time a call finds it missing (a new server, a restart without
 * persistence, `FUNCTION FLUSH`), on every master of a Cluster, and the call is sent again: a
 * missing function never ran, so nothing is spent twice. Calls issued while the library loads wait
 * for it and go out in issue order behind the calls that found it missing. Functions survive
 * `SCRIPT FLUSH`, are replicated, and are persisted with the data.
 *
 * Scripts: when the server does not know `FUNCTION`/`FCALL` or the user may not run them (an ACL
 * without `@scripting` functions), every call from then on is an `EVALSHA`, sent again as `EVAL`
 * when Redis answers `NOSCRIPT`.
 */
export class ScriptRunner {
  private readonly library = scriptLibrary();
  /** Undefined until a call tells: functions are tried first. */
  private scripts = false;
  /** The library being loaded: calls issued meanwhile wait for it. */
  private loading?: Promise<void>;

  constructor(private readonly client: Client) {}

  /** Runs script `id` with these KEYS and ARGV; resolves to its reply. */
  run(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    if (this.loading) return this.loading.then(() => this.run(id, keys, args));
    return this.send(id, keys, args).catch((error: unknown) => this.recover(error, id, keys, args));
  }

  private send(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    if (this.scripts) return this.evalsha(id, keys, args);
    const argv: Array<string | number> = [this.library.functionName(id), keys.length];
    for (const key of keys) argv.push(key);
    for (const arg of args) argv.push(arg);
    return this.client.call('fcall', argv);
  }

  private async recover(
    error: unknown,
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    if (!this.scripts && isFunctionMissing(error)) {
      // It did not run. Load the library (once for every call that found it missing), then
      // send again; a second miss (a flush in between) loads once more.
      for (let attempt = 0; ; attempt++) {
        this.loading ??= this.load().finally(() => (this.loading = undefined));
        await this.loading;
        try {
          return await this.send(id, keys, args);
        } catch (again) {
          if (this.scripts || !isFunctionMissing(again) || attempt >= 2) {
            return explainScriptError(again);
          }
        }
      }
    }
    if (!this.scripts && isFunctionUnavailable(error)) {
      this.scripts = true;
      return this.evalsha(id, keys, args);
    }
    return explainScriptError(error);
  }

  /** `FUNCTION LOAD` on the server, or on every master of a Cluster; switches to scripts if denied. */
  private async load(): Promise<void> {
    const cluster = (this.client as { isCluster?: unknown }).isCluster === true;
    const nodes: Redis[] = cluster
      ? (this.client as Cluster).nodes('master')
      : [this.client as Redis];
    try {
      await Promise.all(
        nodes.map((node) =>
          node.call('function', 'load', this.library.source).catch((error: unknown) => {
            if (!isAlreadyLoaded(error)) throw error;
          }),
        ),
      );
    } catch (error) {
      if (!isFunctionUnavailable(error)) throw error;
      this.scripts = true;
    }
  }

  /**
   * A script by SHA; ioredis loads it again with EVAL when Redis answers NOSCRIPT. ioredis retries
   * once, and may send that retry as EVALSHA (another retry has just loaded the script on this
   * connection): a second flush in between answers NOSCRIPT again. NOSCRIPT means the script did
   * not run, so the call is sent once more as EVAL, which cannot answer it.
   */
  private evalsha(
    id: ScriptId,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    const command = `redlimit_${id.replace(/[-/]/g, '_')}`;
    const lua = this.library.evalSource(id);
    const client = this.client as unknown as Record<string, ScriptCommand | undefined>;
    if (!client[command]) this.client.defineCommand(command, { lua });
    const call = client[command] as ScriptCommand;
    return call
      .call(this.client, keys.length, ...keys, ...args)
      .catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        return this.client.eval(lua, keys.length, ...keys, ...args);
      })
      .catch(explainScriptError);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The library is not on that server: the function did not run. */
function isFunctionMissing(error: unknown): boolean {
  return /^ERR Function not found/i.test(messageOf(error));
}

function isAlreadyLoaded(error: unknown): boolean {
  return /already exists/i.test(messageOf(error));
}

/** Functions are not there (before Redis 7.0) or not permitted (ACL). */
function isFunctionUnavailable(error: unknown): boolean {
  const message = messageOf(error);
  return (
    /^NOPERM/i.test(message) ||
    (/unknown (redis )?command/i.test(message) && /fcall|function/i.test(message))
  );
}

/** Redis did not have the script: it did not run, so sending it again cannot spend twice. */
function isNoScript(error: unknown): boolean {
  return messageOf(error).startsWith('NOSCRIPT');
}

/** Script errors a user can act on get a message that says what to do. */
export function explainScriptError(error: unknown): never {
  const message = messageOf(error);
  if (/unknown (redis )?command/i.test(message) && /pexpiretime|script/i.test(message)) {
    throw new Error(
      `redlimit needs Redis 7.0 or later (its scripts call PEXPIRETIME and SET … PXAT): ${message}`,
      { cause: error },
    );
  }
  throw error;
}
