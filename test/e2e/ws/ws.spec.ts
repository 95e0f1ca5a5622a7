import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LimiterRegistry } from '../../../lib/nest';
import { createTestClient, uniquePrefix, warmPool } from '../../support/redis';
import { Calls, PASSWORD, type Reply, startWsApp, WsClient, wsApp } from './ws.app';

describe('WebSocket gateway (@nestjs/platform-ws, a real ws client)', () => {
  let client: Redis;
  let app: INestApplication;
  let url: string;
  let calls: Calls;
  const sockets: WsClient[] = [];

  const connect = async (
    options: { path?: string; localAddress?: string; headers?: Record<string, string> } = {},
  ): Promise<WsClient> => {
    const { path = '/ws', ...rest } = options;
    const socket = await WsClient.connect(`${url}${path}`, rest);
    sockets.push(socket);
    return socket;
  };
  const errorOf = (reply: Reply) => (reply.event === 'exception' ? reply.data.error : undefined);
  const refusedCode = (reply: Reply) => (errorOf(reply) as { code?: string } | undefined)?.code;

  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(() => client.quit());
  beforeEach(async () => {
    calls = new Calls();
    ({ app, url } = await startWsApp(wsApp(client, uniquePrefix('e2e-ws'), calls)));
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((socket) => socket.close()));
    await app.close();
  });

  it('@Throttle limit 2: the third message is refused with a WsException carrying retryAfterMs; the handler never runs', async () => {
    const socket = await connect();
    expect((await socket.call('ping')).event).toBe('pong');
    expect((await socket.call('ping')).event).toBe('pong');

    const refused = await socket.call('ping');
    expect(refused.event).toBe('exception');
    const error = errorOf(refused) as Record<string, unknown>;
    expect(error).toMatchObject({ status: 'error', code: 'RATE_LIMITED', policy: 'two' });
    expect(error.message).toMatch(/^Rate limit of policy 'two' exceeded; retry in \d+ s$/);
    const retryAfterMs = error.retryAfterMs as number;
    expect(Number.isInteger(retryAfterMs)).toBe(true);
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(3_600_000);
    expect(error.retryAfter).toBe(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    expect(calls.count).toBe(2);
  });

  it("the default key is the handler + the socket's remote address", async () => {
    const first = await connect();
    await first.call('ping');
    await first.call('ping');
    // Another connection from the same address shares the budget…
    expect(refusedCode(await (await connect()).call('ping'))).toBe('RATE_LIMITED');
    // …another address has its own, and so has another handler.
    expect((await (await connect({ localAddress: '127.0.0.2' })).call('ping')).event).toBe('pong');
    expect((await first.call('pong')).event).toBe('ping');

    const two = app.get(LimiterRegistry).get('two');
    expect((await two.peek('ws ChatGateway.ping|ip:127.0.0.1')).allowed).toBe(false);
    expect((await two.peek('ws ChatGateway.ping|ip:127.0.0.2')).allowed).toBe(true);
  });

  it('X-Forwarded-For of a trusted proxy counts once the gateway keeps the upgrade request', async () => {
    const behind = (client: string) =>
      connect({ path: '/ws-behind-proxy', headers: { 'x-forwarded-for': client } });
    const first = await behind('198.51.100.7');
    await first.call('ping');
    await first.call('ping');
    expect(refusedCode(await (await behind('198.51.100.7')).call('ping'))).toBe('RATE_LIMITED');
    expect((await (await behind('198.51.100.8')).call('ping')).event).toBe('pong');

    const two = app.get(LimiterRegistry).get('two');
    expect((await two.peek('ws ProxiedGateway.ping|ip:198.51.100.7')).allowed).toBe(false);
    // Without the upgrade request only the peer is known: the header is never read.
    const direct = await connect({ headers: { 'x-forwarded-for': '198.51.100.9' } });
    await direct.call('ping');
    expect((await two.peek('ws ChatGateway.ping|ip:127.0.0.1')).remaining).toBe(0);
  });

  it('a key function sees the message data', async () => {
    const socket = await connect();
    expect((await socket.call('join', { room: 'a' })).event).toBe('joined');
    expect((await socket.call('join', { room: 'a' })).event).toBe('joined');
    expect(refusedCode(await socket.call('join', { room: 'a' }))).toBe('RATE_LIMITED');
    expect((await socket.call('join', { room: 'b' })).event).toBe('joined');
  });

  it('@Attempt with refund: right passwords cost nothing, the third wrong one is refused before the handler runs', async () => {
    const socket = await connect();
    const signIn = (password: string) =>
      socket.call('sign-in', { email: 'alice@example.com', password });
    for (let i = 0; i < 3; i++) expect((await signIn(PASSWORD)).event).toBe('signed-in');
    for (let i = 0; i < 2; i++) {
      expect(errorOf(await signIn('guess'))).toBe('Wrong email or password');
    }
    const refused = await signIn('guess');
    expect(errorOf(refused)).toMatchObject({ code: 'RATE_LIMITED', policy: 'login' });
    expect((errorOf(refused) as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    expect(calls.count).toBe(5);
    expect(refusedCode(await signIn(PASSWORD))).toBe('RATE_LIMITED'); // the budget is spent
  });

  it('@Attempt parts come from the message data', async () => {
    const socket = await connect();
    const sendCode = (email: string) => socket.call('send-code', { email });
    expect((await sendCode('alice@example.com')).event).toBe('code-sent');
    expect((await sendCode(' Alice@Example.com')).event).toBe('code-sent');
    expect(refusedCode(await sendCode('alice@example.com'))).toBe('RATE_LIMITED');
    expect((await sendCode('bob@example.com')).event).toBe('code-sent');
    expect(calls.count).toBe(3);
  });

  it("'data.email' reads the message data; an array is refused as BAD_USER_INPUT before anything is charged", async () => {
    const socket = await connect();
    const send = (email: unknown) => socket.call('send-code-data', { email: email as string });
    expect(errorOf(await send(['alice@example.com']))).toMatchObject({
      code: 'BAD_USER_INPUT',
      part: 'data.email',
    });
    expect((await send('alice@example.com')).event).toBe('code-sent');
    expect((await send('ALICE@example.com')).event).toBe('code-sent');
    expect(refusedCode(await send('alice@example.com'))).toBe('RATE_LIMITED');
    expect(calls.count).toBe(2);
  });

  it('concurrent messages on one socket each get their own attempt', async () => {
    const socket = await connect();
    // Both spend before either settles (limit 2: a third at once would be refused).
    const replies = await Promise.all([
      socket.call('sign-in', { email: 'carol@example.com', password: PASSWORD }),
      socket.call('sign-in', { email: 'carol@example.com', password: 'guess' }),
    ]);
    expect(replies.map((reply) => reply.event)).toEqual(['signed-in', 'exception']);
    // Only the wrong one was kept: one more wrong is allowed, the next refused.
    expect(errorOf(await socket.call('sign-in', { email: 'carol@example.com' }))).toBe(
      'Wrong email or password',
    );
    expect(refusedCode(await socket.call('sign-in', { email: 'carol@example.com' }))).toBe(
      'RATE_LIMITED',
    );
  });
});
