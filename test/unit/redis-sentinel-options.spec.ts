import * as net from 'node:net';
import {
  RedlimitConnection,
  type RedlimitModuleOptions,
  redlimitOptionsFromEnv,
} from '../../lib/nest';

/**
 * Bad Sentinel options are refused before anything connects: the sentinels below listen on a
 * port nobody may connect to (a server that counts connections), and none is made.
 */
describe('redis: { sentinels, name } validation', () => {
  let server: net.Server;
  let connections = 0;
  let port: number;
  beforeAll(async () => {
    server = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const open = (redis: unknown) =>
    RedlimitConnection.open({ redis } as unknown as RedlimitModuleOptions);

  it.each([
    [
      { name: 'm' },
      /^RedlimitModule redis\.name is the Sentinel master name: it needs redis\.sentinels/,
    ],
    [{ sentinels: [], name: 'm' }, /^RedlimitModule redis\.sentinels must be a non-empty array/],
    [{ sentinels: 'h:1', name: 'm' }, /^RedlimitModule redis\.sentinels must be a non-empty array/],
    [
      {
        sentinels: [
          { host: 'h', port: 1 },
          { host: 'h', port: 70000 },
        ],
        name: 'm',
      },
      /^RedlimitModule redis\.sentinels\[1\]\.port must be a port number, 1–65535; got 70000/,
    ],
    [
      { sentinels: [{ host: '', port: 1 }], name: 'm' },
      /^RedlimitModule redis\.sentinels\[0\]\.host must be a non-empty string/,
    ],
    [
      { sentinels: [{ hots: 'h', port: 1 }], name: 'm' },
      /^RedlimitModule redis\.sentinels\[0\]\.hots is not a field of \{ host, port \}/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }] },
      /^RedlimitModule redis\.name must be the master's name/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }], name: 'm', url: 'redis://h:1' },
      /^RedlimitModule redis\.url cannot be combined with redis\.sentinels/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }], name: 'm', host: 'h' },
      /^RedlimitModule redis\.host cannot be combined with redis\.sentinels/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }], name: 'm', nodes: [{ host: 'h', port: 1 }] },
      /^RedlimitModule redis\.nodes cannot be combined with redis\.sentinels/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }], name: 'm', sentinelPasword: 'x' },
      /^RedlimitModule redis\.sentinelPasword is not an option of a Sentinel connection/,
    ],
    [
      { sentinels: [{ host: 'h', port: 1 }], name: 'm', role: 'slave' },
      /^RedlimitModule redis\.role must be 'master' \(redlimit writes\)/,
    ],
  ])('%j is refused naming the field', async (redis, message) => {
    const withPort: unknown = JSON.parse(
      JSON.stringify(redis)
        .replace(/"port":1\b/g, `"port":${port}`)
        .replace(/"host":"h"/g, '"host":"127.0.0.1"'),
    );
    await expect(open(withPort)).rejects.toThrow(TypeError);
    await expect(open(withPort)).rejects.toThrow(message);
    expect(connections).toBe(0);
  });
});

describe('REDLIMIT_REDIS_SENTINELS and REDLIMIT_REDIS_SENTINEL_NAME', () => {
  it('become redis: { sentinels, name }', () => {
    expect(
      redlimitOptionsFromEnv({
        REDLIMIT_REDIS_SENTINELS: 'sentinel-0:26379, 10.0.0.2:26380,[::1]:26381',
        REDLIMIT_REDIS_SENTINEL_NAME: 'mymaster',
      }).redis,
    ).toEqual({
      sentinels: [
        { host: 'sentinel-0', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'mymaster',
    });
  });

  it('win over the generic REDIS_URL, not over REDLIMIT_REDIS_URL', () => {
    const sentinels = { REDLIMIT_REDIS_SENTINELS: 's:26379', REDLIMIT_REDIS_SENTINEL_NAME: 'm' };
    expect(redlimitOptionsFromEnv({ ...sentinels, REDIS_URL: 'redis://other:6379' }).redis).toEqual(
      { sentinels: [{ host: 's', port: 26379 }], name: 'm' },
    );
    expect(() =>
      redlimitOptionsFromEnv({ ...sentinels, REDLIMIT_REDIS_URL: 'redis://other:6379' }),
    ).toThrow(
      /^REDLIMIT_REDIS_SENTINELS="s:26379" is invalid: REDLIMIT_REDIS_URL is set too; set one of them/,
    );
  });

  it('name the variable in every error', () => {
    expect(() =>
      redlimitOptionsFromEnv({
        REDLIMIT_REDIS_SENTINELS: 's:26379,s',
        REDLIMIT_REDIS_SENTINEL_NAME: 'm',
      }),
    ).toThrow(/^REDLIMIT_REDIS_SENTINELS="s:26379,s" is invalid: 's' is not host:port/);
    expect(() =>
      redlimitOptionsFromEnv({
        REDLIMIT_REDIS_SENTINELS: 's:0',
        REDLIMIT_REDIS_SENTINEL_NAME: 'm',
      }),
    ).toThrow(/^REDLIMIT_REDIS_SENTINELS="s:0" is invalid: 's:0' is not host:port/);
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_REDIS_SENTINELS: 's:26379' })).toThrow(
      /^REDLIMIT_REDIS_SENTINEL_NAME="" is invalid: required with REDLIMIT_REDIS_SENTINELS/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_REDIS_SENTINEL_NAME: 'm' })).toThrow(
      /^REDLIMIT_REDIS_SENTINEL_NAME="m" is invalid: set REDLIMIT_REDIS_SENTINELS too/,
    );
  });
});

describe('REDLIMIT_REDIS_CLUSTER_NODES', () => {
  it('becomes redis: { nodes }', () => {
    expect(
      redlimitOptionsFromEnv({ REDLIMIT_REDIS_CLUSTER_NODES: 'redis-0:6379,redis-1:6379' }).redis,
    ).toEqual({
      nodes: [
        { host: 'redis-0', port: 6379 },
        { host: 'redis-1', port: 6379 },
      ],
    });
  });

  it('is refused beside another Redis, and when malformed, naming the variable', () => {
    expect(() =>
      redlimitOptionsFromEnv({
        REDLIMIT_REDIS_CLUSTER_NODES: 'redis-0:6379',
        REDLIMIT_REDIS_SENTINELS: 's:26379',
        REDLIMIT_REDIS_SENTINEL_NAME: 'm',
      }),
    ).toThrow(
      /^REDLIMIT_REDIS_CLUSTER_NODES="redis-0:6379" is invalid: REDLIMIT_REDIS_SENTINELS is set too/,
    );
    expect(() => redlimitOptionsFromEnv({ REDLIMIT_REDIS_CLUSTER_NODES: 'redis-0' })).toThrow(
      /^REDLIMIT_REDIS_CLUSTER_NODES="redis-0" is invalid: 'redis-0' is not host:port/,
    );
  });
});
