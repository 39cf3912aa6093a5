import { AddressInfo } from 'node:net';
import { buildSchema, ExecutionResult, parse } from 'graphql';
import WebSocket, { WebSocketServer } from 'ws';
import { sharedDocuments } from '../../src/http/ws-documents';
import { once } from 'node:events';
import { ownBuffer, ownMessageBuffers, sharedPayloads } from '../../src/http/ws-payloads';
import { wsText } from '../support/ws-text';

/**
 * A `next` message whose result is shared (src/http/ws-payloads.ts) goes out as one WebSocket
 * frame written by the gateway itself: a few bytes naming the subscription, then the result's
 * bytes, serialized once for every subscriber. Whatever its length (each frame-length form) and
 * whatever the subscription id, the client reads the message graphql-ws would have sent.
 */
describe('sharedPayloads', () => {
  let wss: WebSocketServer;
  let payloads: ReturnType<typeof sharedPayloads>;
  const sockets: WebSocket[] = [];
  const clients: WebSocket[] = [];

  async function start(perMessageDeflate: boolean) {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate });
    payloads = sharedPayloads(wss);
    wss.on('connection', (socket) => sockets.push(socket));
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  }

  /** A client, and the server's side of its connection; messages as text, in order. */
  async function connect(perMessageDeflate = false) {
    const before = sockets.length;
    const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { perMessageDeflate });
    clients.push(client);
    const received: string[] = [];
    client.on('message', (data) => received.push(wsText(data)));
    await new Promise((resolve) => client.once('open', resolve));
    while (sockets.length === before) await new Promise((r) => setTimeout(r, 5));
    return { client, socket: sockets[sockets.length - 1], received };
  }

  /** What graphql-ws does with onNext's answer: its own message around it, sent with a callback. */
  function sendNext(socket: WebSocket, id: string, result: ExecutionResult): Promise<void> {
    const payload = payloads.next(socket, id, result);
    return new Promise((resolve, reject) => socket.send(JSON.stringify({ id, type: 'next', payload }), (err?: Error) => (err ? reject(err) : resolve())));
  }

  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(cond()).toBe(true);
  };

  afterEach(async () => {
    for (const c of clients.splice(0)) c.terminate();
    sockets.length = 0;
    await new Promise((resolve) => wss.close(resolve));
  });

  it('sends every length of message, any subscription id, intact and in order', async () => {
    await start(false);
    const { socket, received } = await connect();
    const results: Array<[string, ExecutionResult]> = [
      ['1', { data: { n: 1 } }], // under 126 bytes
      ['8f0c2b6e-6a1f-4e0b-9d7e-2f5c1a3b4d5e', { data: { lines: 'x'.repeat(1000) } }], // a 2-byte length
      ['üñï "quoted" id', { data: { lines: 'é'.repeat(40_000) } }], // over 65,535 bytes: an 8-byte length, multibyte text
      ['2', { data: { n: 2 } }],
    ];
    for (const [id, result] of results) await sendNext(socket, id, result);
    await until(() => received.length === results.length);
    expect(received.map((m) => JSON.parse(m))).toEqual(results.map(([id, result]) => ({ id, type: 'next', payload: result })));
  });

  it('writes one result’s bytes for all its subscribers, and other messages as they were', async () => {
    await start(false);
    const a = await connect();
    const b = await connect();
    const shared: ExecutionResult = { data: { lines: [{ seq: 1, message: 'hello' }] } };
    const stringify = jest.spyOn(JSON, 'stringify');
    await sendNext(a.socket, 'a', shared);
    await sendNext(b.socket, 'b', shared);
    // The result itself was serialized once (the other calls are the ids and the stand-ins).
    expect(stringify.mock.calls.filter(([v]) => v === shared)).toHaveLength(1);
    stringify.mockRestore();
    a.socket.send('{"type":"pong"}');
    await until(() => a.received.length === 2 && b.received.length === 1);
    expect(JSON.parse(a.received[0])).toEqual({ id: 'a', type: 'next', payload: shared });
    expect(JSON.parse(b.received[0])).toEqual({ id: 'b', type: 'next', payload: shared });
    expect(a.received[1]).toBe('{"type":"pong"}');
  });

  it('writer: writes the message graphql-ws would send, in order with the others, for any id and length', async () => {
    await start(false);
    const { socket, received } = await connect();
    const write = payloads.writer(socket, 'sub "1"', () => true);
    const small: ExecutionResult = { data: { n: 1 } };
    const large: ExecutionResult = { data: { lines: 'z'.repeat(70_000) } };
    expect(write(small)).toBe(true);
    socket.send('{"type":"pong"}');
    expect(write(large)).toBe(true);
    await until(() => received.length === 3);
    expect(received.map((m) => JSON.parse(m))).toEqual([
      { id: 'sub "1"', type: 'next', payload: small },
      { type: 'pong' },
      { id: 'sub "1"', type: 'next', payload: large },
    ]);
  });

  it('writer: declines (writes nothing) when the subscription ended, bytes wait unsent, the socket closed, or compression is on', async () => {
    await start(false);
    const a = await connect();
    const result: ExecutionResult = { data: { n: 2 } };
    expect(payloads.writer(a.socket, '1', () => false)(result)).toBe(false);
    // A limit below what waits (nothing waits: -1) stands for a socket that lags.
    expect(payloads.writer(a.socket, '1', () => true, -1)(result)).toBe(false);
    a.socket.close();
    expect(payloads.writer(a.socket, '1', () => true)(result)).toBe(false);
    // A server of its own that negotiates compression (afterEach closes only the last).
    const first = wss;
    await start(true);
    await new Promise((resolve) => first.close(resolve));
    const b = await connect(true);
    expect(payloads.writer(b.socket, '1', () => true)(result)).toBe(false);
    // Nothing was written directly: a message sent the usual way after it is the first the client reads.
    await sendNext(b.socket, '1', result);
    await until(() => b.received.length === 1);
    expect(a.received).toEqual([]);
    expect(JSON.parse(b.received[0])).toEqual({ id: '1', type: 'next', payload: result });
  });

  it('leaves the message to ws when an extension (compression) was negotiated', async () => {
    await start(true);
    const { socket, client, received } = await connect(true);
    expect(client.extensions).toContain('permessage-deflate');
    const result: ExecutionResult = { data: { lines: 'y'.repeat(5000) } };
    await sendNext(socket, '7', result);
    await until(() => received.length === 1);
    expect(JSON.parse(received[0])).toEqual({ id: '7', type: 'next', payload: result });
  });
});

/**
 * graphql-ws parses and validates each `subscribe` itself; with sharedDocuments, the same text
 * yields the same document once it validated, and an invalid one is never remembered.
 */
/**
 * What a subscription keeps for its lifetime holds bytes of its own: a small Buffer sliced from
 * Node's 8 KB pool, or from a larger read, keeps the whole store (about 3.7 KB per idle
 * subscriber in the benchmark, through graphql-ws keeping the message that started each one).
 */
describe('ownBuffer and ownMessageBuffers', () => {
  it('ownBuffer copies a slice of a larger store into one of its own, and keeps a Buffer that has one', () => {
    const pooled = Buffer.from('{"id":"1","type":"subscribe"}');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.byteLength); // from the pool
    const own = ownBuffer(pooled);
    expect(own.equals(pooled)).toBe(true);
    expect(own.buffer.byteLength).toBe(own.byteLength);
    expect(ownBuffer(own)).toBe(own);
  });

  it('every listener of a connection’s messages gets the bytes sent, in a store of their own', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    ownMessageBuffers(wss);
    const received: Array<{ text: string; own: boolean; binary: boolean }> = [];
    wss.on('connection', (socket) =>
      socket.on('message', (data: Buffer, isBinary: boolean) =>
        received.push({ text: data.toString(), own: data.buffer.byteLength === data.byteLength, binary: isBinary }),
      ),
    );
    await once(wss, 'listening');
    const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    try {
      await once(client, 'open');
      const texts = ['{"type":"connection_init"}', '{"id":"1","type":"subscribe","payload":{"query":"subscription { s }"}}', 'x'.repeat(70_000)];
      for (const text of texts) client.send(text);
      client.send(Buffer.from([1, 2, 3]));
      while (received.length < 4) await new Promise((r) => setImmediate(r));
      expect(received.map((r) => r.text)).toEqual([...texts, '\u0001\u0002\u0003']);
      expect(received.map((r) => r.own)).toEqual([true, true, true, true]);
      expect(received.map((r) => r.binary)).toEqual([false, false, false, true]);
    } finally {
      client.close();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });
});

describe('sharedDocuments', () => {
  const schema = buildSchema('type Query { a: Int } type Subscription { ticks(n: Int): Int }');

  it('gives later subscribers with the same text the document already validated', () => {
    const docs = sharedDocuments(schema);
    const text = 'subscription S($n: Int) { ticks(n: $n) }';
    const first = docs.parse(text);
    expect(docs.validate(schema, first)).toEqual([]);
    const second = docs.parse(text);
    expect(second).toBe(first);
    expect(docs.validate(schema, second)).toEqual([]);
    // Another text, another document.
    expect(docs.parse('subscription { ticks }')).not.toBe(first);
  });

  it('does not remember an invalid document, and reports its errors every time', () => {
    const docs = sharedDocuments(schema);
    const text = 'subscription { nope }';
    const first = docs.parse(text);
    expect(docs.validate(schema, first).map((e) => e.message)).toEqual(['Cannot query field "nope" on type "Subscription".']);
    const second = docs.parse(text);
    expect(second).not.toBe(first);
    expect(docs.validate(schema, second)).toHaveLength(1);
    // Syntax errors are thrown, as graphql-js's parse does.
    expect(() => docs.parse('subscription {')).toThrow(/Syntax Error/);
  });

  it('validates against another schema as graphql-js does', () => {
    const docs = sharedDocuments(schema);
    const doc = docs.parse('subscription { ticks }');
    expect(docs.validate(schema, doc)).toEqual([]);
    // The document is remembered as valid for the gateway's schema only.
    const other = buildSchema('type Query { a: Int } type Subscription { other: Int }');
    expect(docs.validate(other, doc).map((e) => e.message)).toEqual(['Cannot query field "ticks" on type "Subscription".']);
    expect(docs.validate(other, parse('subscription { other }'))).toEqual([]);
  });
});
