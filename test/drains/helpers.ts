import { rmSync } from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import tls from 'node:tls';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { buildApp, Gateway } from '../../src/app';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { selfSignedCert, SelfSigned } from '../support/tls';

export const DRAIN_ID = /^drn_[0-9a-z]{26}$/;

/** One line as a drain receiver got it. */
export interface ShippedLine {
  deployment: string;
  seq: number;
  timestamp: string;
  type: string;
  message: string;
  stream?: string;
}

/** Resolves when `ready()` holds, re-checked on every `check()`; the test's timeout bounds it. */
class Waiters {
  private readonly list: Array<{ ready: () => boolean; resolve: () => void }> = [];
  until(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.list.push({ ready, resolve }));
  }
  check(): void {
    for (const w of [...this.list]) {
      if (w.ready()) {
        this.list.splice(this.list.indexOf(w), 1);
        w.resolve();
      }
    }
  }
}

/** A request an NDJSON receiver got. */
export interface DrainRequest {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/**
 * A real https receiver on 127.0.0.1 with a self-signed certificate (the gateway trusts it through
 * HATCHERY_WEBHOOK_CA_FILE). It answers `status` (200 unless told otherwise) and records the
 * lines of the requests it answered with a 2xx.
 */
export class NdjsonReceiver {
  readonly requests: DrainRequest[] = [];
  /** Lines of accepted requests, in arrival order. */
  readonly lines: ShippedLine[] = [];
  status = 200;
  private readonly waiters = new Waiters();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: https.Server,
    readonly cert: SelfSigned,
    readonly port: number,
  ) {}

  static async start(cert = selfSignedCert('hatchery-drains-', '127.0.0.1', 'IP:127.0.0.1,DNS:localhost')): Promise<NdjsonReceiver> {
    let self: NdjsonReceiver | null = null;
    const server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = self!;
        const body = Buffer.concat(chunks).toString('utf8');
        const status = r.status;
        r.requests.push({ headers: req.headers, body, status });
        if (status >= 200 && status < 300) for (const line of body.split('\n').filter(Boolean)) r.lines.push(JSON.parse(line) as ShippedLine);
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end('ok');
        r.waiters.check();
      });
    });
    server.on('secureConnection', (s: Socket) => {
      self?.sockets.add(s);
      s.on('close', () => self?.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new NdjsonReceiver(server, cert, (server.address() as AddressInfo).port);
    return self;
  }

  url(path = '/drain'): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  /** Resolves once `ready()` holds for what has arrived. */
  until(ready: (r: NdjsonReceiver) => boolean): Promise<void> {
    return this.waiters.until(() => ready(this));
  }

  /** Resolves once every one of `messages` has arrived in an accepted request. */
  untilMessages(messages: string[]): Promise<void> {
    return this.until((r) => {
      const got = new Set(r.lines.map((l) => l.message));
      return messages.every((m) => got.has(m));
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.cert.dir, { recursive: true, force: true });
  }
}

/** A syslog message as parsed from an octet-counted frame (RFC 6587 §3.4.1, RFC 5424). */
export interface SyslogMessage {
  length: number;
  pri: number;
  version: number;
  timestamp: string;
  hostname: string;
  appName: string;
  procId: string;
  msgId: string;
  structuredData: string;
  msg: string;
}

const RFC5424 = /^<(\d{1,3})>(\d) (\S+) (\S+) (\S+) (\S+) (\S+) (-|(?:\[[^\]]*\])+)(?: ([\s\S]*))?$/;

export function parseSyslog(frame: Buffer, length: number): SyslogMessage {
  const m = RFC5424.exec(frame.toString('utf8'));
  if (!m) throw new Error(`not an RFC 5424 message: ${frame.toString('utf8')}`);
  return {
    length,
    pri: Number(m[1]),
    version: Number(m[2]),
    timestamp: m[3],
    hostname: m[4],
    appName: m[5],
    procId: m[6],
    msgId: m[7],
    structuredData: m[8],
    msg: m[9] ?? '',
  };
}

/**
 * A real TLS syslog listener on 127.0.0.1 (node:tls, self-signed certificate) that parses
 * octet-counted frames byte-exactly, whatever the TCP segmentation.
 */
export class SyslogListener {
  readonly messages: SyslogMessage[] = [];
  connections = 0;
  private readonly waiters = new Waiters();
  private readonly sockets = new Set<tls.TLSSocket>();
  readonly errors: string[] = [];

  private constructor(
    private readonly server: tls.Server,
    readonly cert: SelfSigned,
    readonly port: number,
  ) {}

  static async start(): Promise<SyslogListener> {
    const cert = selfSignedCert('hatchery-syslog-', '127.0.0.1', 'IP:127.0.0.1,DNS:localhost');
    let self: SyslogListener | null = null;
    const server = tls.createServer({ key: cert.key, cert: cert.cert }, (socket) => {
      const r = self!;
      r.connections++;
      r.sockets.add(socket);
      socket.on('close', () => r.sockets.delete(socket));
      socket.on('error', () => undefined);
      let buf = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        for (;;) {
          const space = buf.indexOf(0x20);
          if (space < 0) break;
          const lenText = buf.subarray(0, space).toString('ascii');
          if (!/^[1-9]\d{0,8}$/.test(lenText)) {
            r.errors.push(`bad frame length ${JSON.stringify(lenText)}`);
            socket.destroy();
            return;
          }
          const len = Number(lenText);
          if (buf.length < space + 1 + len) break;
          const frame = buf.subarray(space + 1, space + 1 + len);
          buf = buf.subarray(space + 1 + len);
          try {
            r.messages.push(parseSyslog(frame, len));
          } catch (err) {
            r.errors.push((err as Error).message);
          }
        }
        r.waiters.check();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new SyslogListener(server, cert, (server.address() as AddressInfo).port);
    return self;
  }

  url(): string {
    return `syslog+tls://127.0.0.1:${this.port}`;
  }

  until(ready: (l: SyslogListener) => boolean): Promise<void> {
    return this.waiters.until(() => ready(this));
  }

  untilMessages(messages: string[]): Promise<void> {
    return this.until((l) => {
      const got = new Set(l.messages.map((m) => m.msg));
      return messages.every((m) => got.has(m));
    });
  }

  /** Cuts every open connection (the receiver restarting). */
  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.cert.dir, { recursive: true, force: true });
  }
}

/** Quick retries, so outages are short; a fast safety-net poll is NOT set: wake-ups come from the log writer. */
export const FAST_RETRIES = { HATCHERY_LOG_DRAIN_RETRY_BASE_MS: '30', HATCHERY_LOG_DRAIN_RETRY_MAX_MS: '200' };

/** A gateway that trusts `certFile` and may reach 127.0.0.1; `env` on top. */
export function startDrainGateway(certFile: string, env: Record<string, string> = {}): Promise<TestGateway> {
  return startGateway({
    HATCHERY_LOG_DRAIN_WORKER: 'on',
    HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    HATCHERY_WEBHOOK_CA_FILE: certFile,
    ...FAST_RETRIES,
    ...env,
  });
}

/** An egg with one live deployment (simulated runtime): its owner, slug and deployment id. */
export async function liveEgg(t: TestGateway): Promise<{ owner: TestUser; slug: string; deploymentId: string }> {
  const owner = await makeUser(t.gateway);
  const { slug } = await makeApp(t.url, owner);
  const d = await deploy(t.url, owner, slug);
  expect(await settle(t.url, owner, d.id)).toBe('LIVE');
  return { owner, slug, deploymentId: d.id };
}

/** Writes `messages` to the deployment's runtime log through the gateway's log writer, and waits until they are stored. */
export async function writeLines(gateway: Gateway, deploymentId: string, messages: string[]): Promise<void> {
  const writer = gateway.services.deployments.writer;
  await writer.open(deploymentId);
  for (const m of messages) writer.append(deploymentId, LogType.RUNTIME, m);
  await writer.flush();
}

export const names = (prefix: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `${prefix}-${from + i}`);

/**
 * Per deployment, the seqs in the order they arrived must be increasing once repeats are left out
 * (at least once: a batch may come again after a failed acknowledgement), and without gaps.
 */
export function expectInOrderNoGaps(lines: Array<{ deployment: string; seq: number }>): Map<string, number[]> {
  const byDeployment = new Map<string, number[]>();
  for (const l of lines) {
    const seen = byDeployment.get(l.deployment) ?? [];
    if (!seen.includes(l.seq)) {
      if (seen.length) expect(l.seq).toBe(seen[seen.length - 1] + 1);
      seen.push(l.seq);
    }
    byDeployment.set(l.deployment, seen);
  }
  return byDeployment;
}

/** POST /v1/apps/:slug/log-drains. */
export function postDrain(t: { url: string }, token: string | null, slug: string, body: unknown) {
  return rest(t.url, token, 'POST', `/v1/apps/${slug}/log-drains`, body);
}

export function listDrains(t: { url: string }, token: string | null, slug: string) {
  return rest(t.url, token, 'GET', `/v1/apps/${slug}/log-drains`);
}

export function deleteDrain(t: { url: string }, token: string | null, slug: string, id: string) {
  return rest(t.url, token, 'DELETE', `/v1/apps/${slug}/log-drains/${id}`);
}

/**
 * Checks a request's Standard Webhooks signature with the real `standardwebhooks` library (its
 * `verify` parses the body as one JSON document, which NDJSON is not, so the expected signature is
 * computed with its `sign` and compared); throws when it does not match or the timestamp is stale.
 */
export function verifySigned(secret: string, r: DrainRequest): void {
  const id = r.headers['webhook-id'];
  const ts = Number(r.headers['webhook-timestamp']);
  const given = String(r.headers['webhook-signature'] ?? '').split(' ');
  if (typeof id !== 'string' || !Number.isInteger(ts)) throw new Error('missing webhook-id or webhook-timestamp');
  if (Math.abs(Date.now() / 1000 - ts) > 300) throw new Error('timestamp outside the 5-minute tolerance');
  const expected = new StandardWebhook(secret).sign(id, new Date(ts * 1000), r.body);
  if (!given.includes(expected)) throw new Error('signature mismatch');
}

/** The drain's REST record, polled until `done` (the drain's state has no event stream; bounded). */
export async function drainWhen(
  t: { url: string },
  token: string,
  slug: string,
  id: string,
  done: (d: Record<string, any>) => boolean,
): Promise<Record<string, any>> {
  for (let i = 0; i < 400; i++) {
    const res = await listDrains(t, token, slug);
    const d = (res.body.data as Array<Record<string, any>>).find((x) => x.id === id);
    if (d && done(d)) return d;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`log drain ${id} never reached the expected state`);
}

/** A second gateway on the test gateway's database (a restart, or another instance). */
export async function anotherGateway(t: TestGateway): Promise<{ gateway: Gateway; url: string }> {
  const gateway = buildApp(t.config);
  return { gateway, url: await gateway.start(0) };
}
