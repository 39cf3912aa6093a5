import https from 'node:https';
import tls from 'node:tls';
import { Webhook as Signer } from 'standardwebhooks';
import { within } from '../../timeout';
import { AddressGuard, literalAddress } from '../webhooks/address-guard';
import { failureText } from '../webhooks/webhook-sender';

/** One stored log line on its way to a drain. */
export interface DrainLine {
  deploymentId: string;
  seq: number;
  timestamp: Date;
  type: string;
  message: string;
  /** `stdout` or `stderr` where the runtime knew it; null otherwise (or before log_lines had the column). */
  stream: string | null;
}

export interface SendOutcome {
  ok: boolean;
  /** HTTP status of the answer (NDJSON); null when none came or for syslog. */
  status: number | null;
  error: string | null;
}

/** Ships batches to one drain's receiver; keeps its connection between batches. */
export interface DrainSender {
  send(lines: DrainLine[], messageId: string, at: Date): Promise<SendOutcome>;
  close(): void;
}

export interface SenderOptions {
  timeoutMs: number;
  /** An extra CA to trust next to the public roots (HATCHERY_WEBHOOK_CA_FILE). */
  ca?: Buffer;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

/** The NDJSON body: one JSON object per line, `stream` only where it is known. */
export function ndjsonBody(lines: DrainLine[]): string {
  let body = '';
  for (const l of lines) {
    const o: Record<string, unknown> = { deployment: l.deploymentId, seq: l.seq, timestamp: l.timestamp.toISOString(), type: l.type, message: l.message };
    if (l.stream) o.stream = l.stream;
    body += JSON.stringify(o) + '\n';
  }
  return body;
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

/** The address check before a connection: a name is checked by the connection's own lookup, an IP literal here. */
async function literalRefusal(guard: AddressGuard, url: URL): Promise<string | null> {
  return literalAddress(url.hostname) ? guard.refusal(url) : null;
}

/**
 * POSTs batches as `application/x-ndjson`, signed like webhooks (Standard Webhooks headers), over
 * one kept-alive connection. A 2xx acknowledges the batch; redirects are not followed.
 */
export class NdjsonSender implements DrainSender {
  private readonly agent: https.Agent;
  private readonly signer: Signer;

  constructor(
    private readonly url: URL,
    secret: string,
    private readonly guard: AddressGuard,
    private readonly opts: SenderOptions,
  ) {
    this.signer = new Signer(secret);
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: opts.ca ? [...tls.rootCertificates, opts.ca] : undefined });
  }

  async send(lines: DrainLine[], messageId: string, at: Date): Promise<SendOutcome> {
    const refused = await literalRefusal(this.guard, this.url);
    if (refused) return { ok: false, status: null, error: `refused: ${refused}` };
    const body = ndjsonBody(lines);
    const timedOut = `timed out after ${this.opts.timeoutMs} ms`;
    return new Promise<SendOutcome>((resolve) => {
      const req = https.request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          timeout: this.opts.timeoutMs,
          lookup: this.guard.lookupFor(this.url.hostname),
          headers: {
            'content-type': 'application/x-ndjson',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'Hatchery-LogDrains/1',
            'webhook-id': messageId,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': this.signer.sign(messageId, at, body),
          },
        },
        (res) => {
          const status = res.statusCode ?? null;
          const done = () =>
            resolve({
              ok: status !== null && status >= 200 && status < 300,
              status,
              error: status !== null && (status < 200 || status >= 300) ? `HTTP ${status}` : null,
            });
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on('end', done);
          res.on('close', done);
          res.on('error', done);
        },
      );
      const hardStop = setTimeout(() => req.destroy(new Error(timedOut)), this.opts.timeoutMs);
      req.on('timeout', () => req.destroy(new Error(timedOut)));
      req.on('error', (err) => resolve({ ok: false, status: null, error: failureText(err) }));
      req.on('close', () => clearTimeout(hardStop));
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** RFC 5424 severities: err for standard error, info for everything else. */
const SEVERITY_ERR = 3;
const SEVERITY_INFO = 6;
const FACILITY_USER = 1;

/** A field of the RFC 5424 header: printable US-ASCII without spaces, at most `max` characters, `-` when empty. */
function headerField(value: string, max: number): string {
  const clean = value.replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return clean || '-';
}

/**
 * One line as an RFC 5424 message in octet-counting framing (RFC 6587 §3.4.1):
 * `<len> <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG`, HOSTNAME `hatchery`, APP-NAME the
 * egg's slug, PROCID the deployment id, MSGID the line's type (`build`, `runtime`).
 */
export function syslogFrame(line: DrainLine, appName: string): Buffer {
  const pri = FACILITY_USER * 8 + (line.stream === 'stderr' ? SEVERITY_ERR : SEVERITY_INFO);
  const header = `<${pri}>1 ${line.timestamp.toISOString()} hatchery ${headerField(appName, 48)} ${headerField(line.deploymentId, 128)} ${headerField(line.type, 32)} -`;
  const msg = Buffer.from(`${header} ${line.message}`, 'utf8');
  return Buffer.concat([Buffer.from(`${msg.length} `, 'ascii'), msg]);
}

/**
 * Writes batches of RFC 5424 frames to one TLS connection, opened when needed and again after it
 * failed. A batch counts as shipped once it is written to the socket without error (syslog has
 * no acknowledgement of its own).
 */
/** Whether a connection can still carry lines: not closed, and the receiver has not ended its side. */
const usable = (socket: tls.TLSSocket) => !socket.destroyed && !socket.readableEnded && socket.writable;

export class SyslogSender implements DrainSender {
  private socket: tls.TLSSocket | null = null;

  constructor(
    private readonly url: URL,
    private readonly appName: string,
    private readonly guard: AddressGuard,
    private readonly opts: SenderOptions,
  ) {}

  async send(lines: DrainLine[]): Promise<SendOutcome> {
    const timedOut = `timed out after ${this.opts.timeoutMs} ms`;
    try {
      const refused = await literalRefusal(this.guard, this.url);
      if (refused) return { ok: false, status: null, error: `refused: ${refused}` };
      // A close the receiver sent is only seen once its event is handled: handle what is pending
      // first, so a batch is not written (and counted) on a connection already closed.
      await new Promise(setImmediate);
      if (this.socket && !usable(this.socket)) this.close();
      const socket = this.socket ?? (await this.connect(timedOut));
      const payload = Buffer.concat(lines.map((l) => syslogFrame(l, this.appName)));
      await within(new Promise<void>((resolve, reject) => socket.write(payload, (err) => (err ? reject(err) : resolve()))), this.opts.timeoutMs, () => {
        throw new Error(timedOut);
      });
      // And once more after: a close that crossed the write means the batch may be lost; send it again.
      await new Promise(setImmediate);
      if (!usable(socket)) throw new Error('the receiver closed the connection');
      return { ok: true, status: null, error: null };
    } catch (err) {
      this.close();
      return { ok: false, status: null, error: failureText(err as Error) };
    }
  }

  private async connect(timedOut: string): Promise<tls.TLSSocket> {
    const host = bare(this.url.hostname);
    const socket = tls.connect({
      host,
      port: Number(this.url.port),
      servername: literalAddress(this.url.hostname) ? undefined : host,
      ca: this.opts.ca ? [...tls.rootCertificates, this.opts.ca] : undefined,
      lookup: this.guard.lookupFor(this.url.hostname),
    });
    socket.setNoDelay(true);
    // Whatever the receiver sends is not read for anything; an error ends this connection only.
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
    });
    try {
      await within(
        new Promise<void>((resolve, reject) => {
          socket.once('secureConnect', resolve);
          socket.once('error', reject);
          socket.once('close', () => reject(new Error('the receiver closed the connection')));
        }),
        this.opts.timeoutMs,
        () => {
          throw new Error(timedOut);
        },
      );
    } catch (err) {
      socket.destroy();
      throw err;
    }
    this.socket = socket;
    return socket;
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }
}
