import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { checkRestResponse } from '../support/openapi-check';
import { request } from './helpers';
import { wsText } from '../support/ws-text';

/** Request bodies and graphql-ws messages of at most 4096 bytes (HATCHERY_BODY_LIMIT_BYTES). */
const LIMIT = 4096;

/** `{"project":…,"env":{"PAD":"xxx…"}}`, padded to exactly `size` bytes. */
function deployBody(project: string, size: number): string {
  const bare = JSON.stringify({ project, env: { PAD: '' } });
  return JSON.stringify({ project, env: { PAD: 'x'.repeat(size - bare.length) } });
}

/** A graphql-ws subscribe message for `{ viewer { id } }`, padded with spaces to exactly `size` bytes. */
function subscribeMessage(id: string, size: number): string {
  const bare = JSON.stringify({ id, type: 'subscribe', payload: { query: '{ viewer { id } }' } });
  return JSON.stringify({ id, type: 'subscribe', payload: { query: `{ viewer { id } }${' '.repeat(size - bare.length)}` } });
}

describe('body size limits', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;
  const deployments = async () => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM deployments'))[0].n as number;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_BODY_LIMIT_BYTES: String(LIMIT) });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('REST: a body of the limit is taken; one byte more is 413 payload_too_large and writes nothing', async () => {
    const over = deployBody(slug, LIMIT + 1);
    expect(Buffer.byteLength(over)).toBe(LIMIT + 1);
    const before = await deployments();
    const res = await rest(t.url, user.token, 'POST', '/deploy', over);
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large', title: 'Payload Too Large' });
    expect(res.body.detail).toContain(String(LIMIT));
    expect(await deployments()).toBe(before);

    const at = deployBody(slug, LIMIT);
    expect(Buffer.byteLength(at)).toBe(LIMIT);
    const ok = await rest(t.url, user.token, 'POST', '/deploy', at);
    expect(ok.status).toBe(201);
    expect(await deployments()).toBe(before + 1);
  });

  it('REST: a body sent in chunks without a length is cut off at the limit too', async () => {
    const res = await fetch(`${t.url}/deploy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
      body: new ReadableStream({
        start(controller) {
          const body = new TextEncoder().encode(deployBody(slug, LIMIT * 4));
          for (let i = 0; i < body.length; i += 1024) controller.enqueue(body.slice(i, i + 1024));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(res.status).toBe(413);
    const text = await res.text();
    checkRestResponse('POST', '/deploy', res.status, res.headers, text, JSON.parse(text));
    expect((JSON.parse(text) as { code: string }).code).toBe('payload_too_large');
  });

  it('GraphQL over HTTP: 413 past the limit, answered at it', async () => {
    const body = (size: number) => {
      const bare = JSON.stringify({ query: '{ viewer { id } }' });
      return JSON.stringify({ query: `{ viewer { id } }${' '.repeat(size - bare.length)}` });
    };
    const over = await request(t.url, 'POST', '/graphql', { token: user.token, body: body(LIMIT + 1) });
    expect(over.status).toBe(413);
    // GraphQL's own error shape on /graphql, not a problem body.
    expect(over.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }) })]);
    expect(over.body.errors[0].message).toContain(String(LIMIT));
    const at = await request(t.url, 'POST', '/graphql', { token: user.token, body: body(LIMIT) });
    expect(at.status).toBe(200);
    expect(at.body.data).toEqual({ viewer: { id: user.id } });
  });

  it('graphql-ws: a message of the limit is taken; a larger one closes the socket with 1009', async () => {
    const socket = new WebSocket(t.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
    const messages: Array<{ type: string; id?: string; payload?: unknown }> = [];
    const waiters: Array<() => void> = [];
    socket.on('message', (data) => {
      messages.push(JSON.parse(wsText(data)));
      waiters.splice(0).forEach((w) => w());
    });
    const next = (type: string) =>
      new Promise<(typeof messages)[number]>((resolve) => {
        const check = () => {
          const found = messages.find((m) => m.type === type);
          if (found) return resolve(found);
          waiters.push(check);
        };
        check();
      });
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
    await next('connection_ack');

    const id = randomUUID();
    const at = subscribeMessage(id, LIMIT);
    expect(Buffer.byteLength(at)).toBe(LIMIT);
    socket.send(at);
    expect(await next('next')).toMatchObject({ id, payload: { data: { viewer: { id: user.id } } } });

    socket.send(subscribeMessage(randomUUID(), LIMIT + 1));
    expect(await closed).toBe(1009);
  });

  it('defaults: 1 MiB bodies, 30 s per SQL statement, 10 s per Stripe call', () => {
    const config = loadConfig({});
    expect(config.bodyLimitBytes).toBe(1024 * 1024);
    expect(config.dbStatementTimeoutMs).toBe(30_000);
    expect(config.stripeTimeoutMs).toBe(10_000);
  });
});
