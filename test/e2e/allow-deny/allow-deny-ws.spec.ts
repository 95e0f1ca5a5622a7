import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { type Reply, startWsApp, WsClient } from '../ws/ws.app';
import { allowDenyWsApp, DENIED_ADDRESS, WsSeen } from './allow-deny-ws.app';

describe('the deny list on a WebSocket gateway (@nestjs/platform-ws, a real ws client)', () => {
  let client: Redis;
  let app: INestApplication;
  let url: string;
  let prefix: string;
  let seen: WsSeen;
  const sockets: WsClient[] = [];

  const connect = async (localAddress: string): Promise<WsClient> => {
    const socket = await WsClient.connect(`${url}/ws`, { localAddress });
    sockets.push(socket);
    return socket;
  };
  const errorOf = (reply: Reply) => (reply.event === 'exception' ? reply.data.error : undefined);

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    seen = new WsSeen();
    prefix = uniquePrefix('e2e-allow-deny-ws');
    ({ app, url } = await startWsApp(allowDenyWsApp(client, prefix, seen)));
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((socket) => socket.close()));
    await app.close();
  });

  it('a denied address gets a WsException with code FORBIDDEN from @Throttle and @Attempt handlers; they never run, nothing is charged', async () => {
    const socket = await connect(DENIED_ADDRESS);
    const forbidden = { status: 'error', code: 'FORBIDDEN', message: 'Access denied' };
    expect(errorOf(await socket.call('items'))).toEqual(forbidden);
    expect(errorOf(await socket.call('sign-in'))).toEqual(forbidden);
    expect(seen.handled).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
    expect(seen.events.map((e) => [e.policy, e.outcome])).toEqual([
      ['two', 'denied'],
      ['login', 'denied'],
    ]);
  });

  it('another address is limited as usual', async () => {
    const socket = await connect('127.0.0.1');
    expect((await socket.call('items')).event).toBe('items');
    expect((await socket.call('items')).event).toBe('items');
    expect(errorOf(await socket.call('items'))).toMatchObject({ code: 'RATE_LIMITED' });
    expect((await socket.call('sign-in')).event).toBe('signed-in');
    expect(seen.handled).toBe(3);
  });
});
