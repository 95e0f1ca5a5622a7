import { createHash } from 'node:crypto';
import { type ClientPort, type CommandSender, type EvalScript, isNoScript } from './port-contract';
import type {
  NodeRedisLikeClient,
  NodeRedisLikeCluster,
  NodeRedisLikeSentinel,
} from './redis-client.shape';

/**
 * {@link ClientPort} of a node-redis client (`createClient()`): every command through
 * `sendCommand`, whose arguments must be strings.
 */
export class NodeRedisPort implements ClientPort {
  readonly cluster: boolean = false;
  private readonly shas = new Map<string, string>();

  /** @param send one command; `firstKey` routes it on a Cluster (any node when undefined) */
  constructor(
    private readonly client: NodeRedisLikeClient | undefined,
    protected readonly send: (firstKey: string | undefined, args: string[]) => Promise<unknown> = (
      _key,
      args,
    ) => client!.sendCommand(args),
  ) {}

  status(): string {
    const { isReady, isOpen } = this.client!;
    return isReady ? 'ready' : isOpen ? 'connecting' : 'end';
  }

  time(): Promise<ReadonlyArray<string | number>> {
    return this.send(undefined, ['TIME']) as Promise<ReadonlyArray<string | number>>;
  }

  fcall(
    fn: string,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    return this.send(keys[0], ['FCALL', fn, ...argv(keys, args)]);
  }

  evalScript(
    { lua }: EvalScript,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    let sha = this.shas.get(lua);
    if (sha === undefined) this.shas.set(lua, (sha = createHash('sha1').update(lua).digest('hex')));
    const rest = argv(keys, args);
    return this.send(keys[0], ['EVALSHA', sha, ...rest]).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.send(keys[0], ['EVAL', lua, ...rest]);
    });
  }

  masters(): Promise<CommandSender[]> {
    return Promise.resolve([(args: string[]) => this.send(undefined, args)]);
  }
}

/**
 * {@link ClientPort} of a node-redis Cluster client (`createCluster()`): a script call goes to the
 * master of its first key's slot (node-redis follows MOVED and ASK), `TIME` to any node.
 */
export class NodeRedisClusterPort extends NodeRedisPort {
  override readonly cluster = true;

  constructor(private readonly clusterClient: NodeRedisLikeCluster) {
    super(undefined, (firstKey, args) => clusterClient.sendCommand(firstKey, false, args));
  }

  override status(): string {
    return this.clusterClient.isOpen ? 'ready' : 'end';
  }

  override async masters(): Promise<CommandSender[]> {
    // node-redis v5 answers with a promise, v4 with the client itself when it is connected.
    const clients = await Promise.all(
      this.clusterClient.masters.map((node) =>
        Promise.resolve(this.clusterClient.nodeClient(node)),
      ),
    );
    return clients.map(
      (client): CommandSender =>
        (args) =>
          client.sendCommand(args),
    );
  }
}

/**
 * {@link ClientPort} of a node-redis Sentinel client (`createSentinel()`): every command, `TIME`
 * and `FUNCTION LOAD` included, goes to the master as a write (never to a replica, whose clock
 * and state are not the master's). node-redis sends a command again on the new master when the
 * connection dropped under it in a failover; the spend's deadline still holds there (a script
 * that runs late writes nothing).
 */
export class NodeRedisSentinelPort extends NodeRedisPort {
  constructor(private readonly sentinel: NodeRedisLikeSentinel) {
    super(undefined, (_key, args) => sentinel.sendCommand(false, args));
  }

  /**
   * `ready` once connected to a master (it stays so while node-redis finds the new master after
   * a failover: decisions then follow their fail mode), `end` once closed.
   */
  override status(): string {
    const { isReady, isOpen } = this.sentinel;
    return isReady ? 'ready' : isOpen ? 'connecting' : 'end';
  }
}

/** `numkeys keys… args…`, as strings. */
function argv(keys: readonly string[], args: ReadonlyArray<string | number>): string[] {
  const out = [String(keys.length), ...keys];
  for (const arg of args) out.push(String(arg));
  return out;
}
