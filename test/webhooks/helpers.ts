import { selfSignedCert } from '../support/tls';
import { rmSync } from 'node:fs';
import https from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { CreateWebhookDocument, WebhookDeliveriesDocument, WebhookDeliveriesQuery } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import type { BuildOptions } from '../../src/app';

export const WEBHOOK_ID = /^wh_[0-9a-z]{26}$/;
export const DELIVERY_ID = /^whd_[0-9a-z]{26}$/;
export { ISO_MS } from '../support/factories';
export const MINUTE_MS = 60_000;

/** One request the receiver got: path, lower-case headers (one value each) and the raw body. */
export interface Received {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  /** The parsed JSON body (undefined when it is not JSON). */
  json: any;
  /** When the whole request had arrived (Date.now()). */
  at: number;
}

/** How the receiver answers a request: a status (with headers), or never ('hang'). */
export type Reply = { status: number; headers?: Record<string, string> } | 'hang';

/**
 * A real https server on 127.0.0.1 (port 0) with a self-signed certificate made by openssl for
 * IP 127.0.0.1 and DNS localhost. It records every request per path and answers per path with
 * a configurable reply (200 unless told otherwise). `waitFor(path, n)` resolves once `n`
 * requests to `path` have been recorded.
 */
export class Receiver {
  private readonly byPath = new Map<string, Received[]>();
  private readonly replies = new Map<string, (r: Received) => Reply>();
  private readonly waiters: Array<{ path: string; n: number; resolve: (v: Received[]) => void }> = [];
  private readonly hung: ServerResponse[] = [];

  private constructor(
    private readonly server: https.Server,
    readonly dir: string,
    readonly certFile: string,
    readonly cert: Buffer,
    readonly port: number,
  ) {}

  static async start(): Promise<Receiver> {
    const { dir, certFile, key, cert } = selfSignedCert('hatchery-webhooks-', '127.0.0.1', 'IP:127.0.0.1,DNS:localhost');
    let self: Receiver | null = null;
    const server = https.createServer({ key, cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => self!.handle(req.url ?? '/', req.method ?? '', req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Receiver(server, dir, certFile, cert, (server.address() as AddressInfo).port);
    return self;
  }

  private handle(url: string, method: string, raw: NodeJS.Dict<string | string[]>, body: string, res: ServerResponse): void {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const received: Received = { path: url, method, headers, body, json, at: Date.now() };
    const list = this.byPath.get(url) ?? [];
    list.push(received);
    this.byPath.set(url, list);
    const reply: Reply = (this.replies.get(url) ?? ((): Reply => ({ status: 200 })))(received);
    if (reply === 'hang') {
      this.hung.push(res);
    } else {
      res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
      res.end('ok');
    }
    for (const w of [...this.waiters]) {
      if (w.path === url && list.length >= w.n) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(list.slice());
      }
    }
  }

  /** An https URL of this receiver, by IP literal. */
  url(p: string): string {
    return `https://127.0.0.1:${this.port}${p}`;
  }

  /** Answers requests to `p` with `fn` from now on. */
  reply(p: string, fn: ((r: Received) => Reply) | Reply): void {
    this.replies.set(p, typeof fn === 'function' ? fn : () => fn);
  }

  received(p: string): Received[] {
    return (this.byPath.get(p) ?? []).slice();
  }

  /** Resolves once `n` requests to `p` have arrived. */
  waitFor(p: string, n: number): Promise<Received[]> {
    const list = this.byPath.get(p) ?? [];
    if (list.length >= n) return Promise.resolve(list.slice());
    return new Promise((resolve) => this.waiters.push({ path: p, n, resolve }));
  }

  async stop(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Verifies a received delivery with the `standardwebhooks` package (signature and timestamp
 * tolerance) and returns the verified payload. `receiverNowMs` is the receiver's idea of "now"
 * (for gateways on a ManualClock whose timestamps are far from the wall clock); default: the
 * real time.
 */
export function verifyDelivery(secret: string, r: Received, receiverNowMs?: number): unknown {
  const wh = new StandardWebhook(secret);
  if (receiverNowMs === undefined) return wh.verify(r.body, r.headers);
  const spy = jest.spyOn(Date, 'now').mockReturnValue(receiverNowMs);
  try {
    return wh.verify(r.body, r.headers);
  } finally {
    spy.mockRestore();
  }
}

/** Asserts the Standard Webhooks headers and a valid signature; returns the parsed body. */
export function expectSigned(secret: string, r: Received, receiverNowMs?: number): any {
  expect(r.method).toBe('POST');
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(r.headers['webhook-id']).toEqual(expect.any(String));
  expect(r.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
  expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
  const payload = verifyDelivery(secret, r, receiverNowMs);
  expect(payload).toEqual(JSON.parse(r.body));
  // The verification is not vacuous: another secret, or a changed body, does not pass.
  const other = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
  expect(() => verifyDelivery(other, r, receiverNowMs)).toThrow();
  expect(() => verifyDelivery(secret, { ...r, body: r.body.replace(/}$/, ' }') }, receiverNowMs)).toThrow();
  return payload;
}

/** POST /v1/apps/:slug/webhooks over REST. */
export function postWebhook(t: TestGateway, token: string | null, slug: string, body: unknown) {
  return rest(t.url, token, 'POST', `/v1/apps/${slug}/webhooks`, body);
}

export function listWebhooks(t: TestGateway, token: string | null, slug: string) {
  return rest(t.url, token, 'GET', `/v1/apps/${slug}/webhooks`);
}

export function deleteWebhook(t: TestGateway, token: string | null, slug: string, id: string) {
  return rest(t.url, token, 'DELETE', `/v1/apps/${slug}/webhooks/${id}`);
}

export function testWebhook(t: TestGateway, token: string | null, slug: string, id: string) {
  return rest(t.url, token, 'POST', `/v1/apps/${slug}/webhooks/${id}/test`);
}

/** Registers a webhook over REST (201 expected); returns its id and secret. */
export async function createWebhook(t: TestGateway, token: string, slug: string, url: string): Promise<{ id: string; secret: string }> {
  const res = await postWebhook(t, token, slug, { url, events: ['deploy'] });
  expect(res.status).toBe(201);
  return { id: res.body.id, secret: res.body.secret };
}

/** Registers a webhook over GraphQL; returns its id and secret. */
export async function createWebhookGql(t: TestGateway, token: string, slug: string, url: string): Promise<{ id: string; secret: string }> {
  const { createWebhook } = await gqlOk(t.url, token, CreateWebhookDocument, { app: slug, url, events: ['deploy'] });
  return { id: createWebhook.webhook.id, secret: createWebhook.secret };
}

export type DeliveryNode = WebhookDeliveriesQuery['webhooks'][number]['deliveries']['nodes'][number];

/** A webhook's delivery history over GraphQL, newest first. */
export async function deliveriesOf(t: TestGateway, token: string, slug: string, webhookId: string): Promise<DeliveryNode[]> {
  const { webhooks } = await gqlOk(t.url, token, WebhookDeliveriesDocument, { app: slug, first: 100 });
  const hook = webhooks.find((w) => w.id === webhookId);
  if (!hook) throw new Error(`webhook ${webhookId} not listed`);
  return hook.deliveries.nodes;
}

/**
 * Polls the delivery history until `done` holds (bounded). The history has no event stream:
 * an attempt's outcome is written after the receiver answered, so the test polls for it.
 */
export async function deliveriesWhen(
  t: TestGateway,
  token: string,
  slug: string,
  webhookId: string,
  done: (d: DeliveryNode[]) => boolean,
): Promise<DeliveryNode[]> {
  for (let i = 0; i < 400; i++) {
    const list = await deliveriesOf(t, token, slug, webhookId);
    if (done(list)) return list;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`delivery history of ${webhookId} never reached the expected state`);
}

/** Raw rows of webhook_deliveries for a webhook, oldest first. */
export async function deliveryRows(t: TestGateway, webhookId: string): Promise<Array<Record<string, any>>> {
  return t.gateway.ds.query('SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id', [webhookId]);
}

/** A Receiver, a gateway that delivers to it, and a user of that gateway; `stop()` ends both. */
export interface Delivering {
  receiver: Receiver;
  t: TestGateway;
  owner: TestUser;
  stop: () => Promise<void>;
}

/** Starts a Receiver and a gateway with 127.0.0.1 allow-listed and the receiver's certificate trusted, `env` on top. */
export async function startDelivering(env: Record<string, string>, opts: BuildOptions = {}): Promise<Delivering> {
  const receiver = await Receiver.start();
  const t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1', HATCHERY_WEBHOOK_CA_FILE: receiver.certFile, ...env }, opts);
  return {
    receiver,
    t,
    owner: await makeUser(t.gateway),
    stop: async () => {
      await t.stop();
      await receiver.stop();
    },
  };
}
