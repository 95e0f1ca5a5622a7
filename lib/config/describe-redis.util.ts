import type { RedisStoreClient } from '../stores/clients/redis-client.shape';
import { maskUrl } from './mask-url.util';
import { isSentinelConnection } from './redis-sentinel.util';
import type { RedisConnectionOptions } from './redlimit-options.interface';

/**
 * Where the module's Redis is, for the startup log: URLs (passwords masked, Cluster node URLs
 * too) or host:port.
 *
 * @example
 * describeRedis({ nodes: ['redis://:secret@cache-0:6379'] }, client); // 'Cluster redis://:***@cache-0:6379'
 */
export function describeRedis(redis: RedisConnectionOptions, client: RedisStoreClient): string {
  if (typeof redis === 'string') return maskUrl(redis);
  if ('nodes' in redis) {
    const nodes = redis.nodes.map(
      (node) =>
        typeof node === 'object'
          ? `${node.host ?? 'localhost'}:${node.port ?? 6379}`
          : maskUrl(String(node)), // a node may be a URL with a password
    );
    return `Cluster ${nodes.join(', ')}`;
  }
  if ('client' in redis) {
    const passed = client as {
      isCluster?: boolean;
      masters?: unknown;
      getMasterNode?: () => { host: string; port: number } | undefined;
      options?: {
        host?: string;
        port?: number;
        url?: string;
        socket?: { host?: string; port?: number };
        sentinels?: ReadonlyArray<{ host?: string; port?: number }> | null;
        name?: string | null;
      };
    };
    if (passed.isCluster === true || passed.masters !== undefined) {
      return 'Cluster (the client passed in)';
    }
    if (typeof passed.getMasterNode === 'function') {
      const master = passed.getMasterNode();
      const at = master ? `${master.host}:${master.port}` : '(not found yet)';
      return `the master ${at} of a node-redis Sentinel client (the client passed in)`;
    }
    const { host, port, url, socket, sentinels, name } = passed.options ?? {};
    if (sentinels && sentinels.length > 0) {
      const list = sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`);
      return `the master '${name ?? ''}' of Sentinel ${list.join(', ')} (the client passed in)`;
    }
    if (url !== undefined) return `${maskUrl(url)} (the client passed in)`;
    return `${host ?? socket?.host ?? 'localhost'}:${port ?? socket?.port ?? 6379} (the client passed in)`;
  }
  if (isSentinelConnection(redis)) {
    const sentinels = redis.sentinels.map(({ host, port }) => `${host}:${port}`);
    return `the master '${redis.name}' of Sentinel ${sentinels.join(', ')}`;
  }
  if (redis.url !== undefined) return maskUrl(redis.url);
  return `${redis.host ?? 'localhost'}:${redis.port ?? 6379}`;
}
