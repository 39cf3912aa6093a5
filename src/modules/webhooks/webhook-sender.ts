import https from 'node:https';
import tls from 'node:tls';
import { Webhook as Signer } from 'standardwebhooks';
import { AddressGuard, ForbiddenTarget } from './address-guard';
import { within } from '../../timeout';

export interface SendResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

const OUT_OF_TIME = Symbol('out of time');

/**
 * A failed attempt as the user sees it (`WebhookDelivery.error`): never an address the host name
 * resolved to (Node's `connect ECONNREFUSED 10.0.0.5:443`), nor an internal certificate's names.
 */
export function failureText(err: Error): string {
  if (err instanceof ForbiddenTarget) return `refused: ${err.message}`;
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'the certificate does not name the host (ERR_TLS_CERT_ALTNAME_INVALID)';
  if (typeof (e as { address?: unknown }).address === 'string' && e.syscall && e.code) return `${e.syscall} ${e.code}`;
  return err.message;
}

/**
 * POSTs one signed event (Standard Webhooks headers) over https. Redirects are not followed (a
 * 3xx is a failed attempt); the target is re-checked at connect time; `timeoutMs` bounds it all.
 */
export class WebhookSender {
  constructor(
    private readonly guard: AddressGuard,
    private readonly opts: { timeoutMs: number; ca?: Buffer },
  ) {}

  async send(url: string, secret: string, messageId: string, at: Date, payload: string): Promise<SendResult> {
    const started = Date.now();
    const done = (status: number | null, error: string | null): SendResult => ({
      ok: status !== null && status >= 200 && status < 300,
      status,
      error,
      durationMs: Date.now() - started,
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return done(null, 'invalid URL');
    }
    // One budget for the whole attempt, the address check's DNS lookup included.
    const timedOut = `timed out after ${this.opts.timeoutMs} ms`;
    const refused = await within(this.guard.refusal(target), this.opts.timeoutMs, (): typeof OUT_OF_TIME => OUT_OF_TIME);
    if (refused === OUT_OF_TIME) return done(null, timedOut);
    if (refused) return done(null, `refused: ${refused}`);
    const left = Math.max(1, this.opts.timeoutMs - (Date.now() - started));
    const signature = new Signer(secret).sign(messageId, at, payload);
    return new Promise<SendResult>((resolve) => {
      const req = https.request(
        target,
        {
          method: 'POST',
          timeout: left,
          lookup: this.guard.lookupFor(target.hostname),
          // An operator's extra CA is trusted next to the public roots, not instead of them.
          ca: this.opts.ca ? [...tls.rootCertificates, this.opts.ca] : undefined,
          agent: false,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Hatchery-Webhooks/1',
            'webhook-id': messageId,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signature,
          },
        },
        (res) => {
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on('end', () => resolve(done(res.statusCode ?? null, null)));
          res.on('close', () => resolve(done(res.statusCode ?? null, null)));
          res.on('error', () => resolve(done(res.statusCode ?? null, null)));
        },
      );
      const hardStop = setTimeout(() => req.destroy(new Error(timedOut)), left);
      req.on('timeout', () => req.destroy(new Error(timedOut)));
      req.on('error', (err) => resolve(done(null, failureText(err))));
      req.on('close', () => clearTimeout(hardStop));
      req.end(payload);
    });
  }
}
