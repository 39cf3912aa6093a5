import { ValidationFailed } from '../../errors';
import { AddressGuard } from '../webhooks/address-guard';
import { LogDrainFormat } from './log-drain.entity';

const MAX_URL = 2048;
const SYSLOG_SCHEME = 'syslog+tls:';
const SYSLOG_TLS_PORT = 6514;

/**
 * A `syslog+tls://host:port` URL as an https URL of the same host and port, so the host is
 * parsed (and IP literals normalised) as for webhooks and the address guard reads it alike.
 * The port defaults to 6514 (syslog over TLS, RFC 5425).
 */
export function syslogTarget(raw: string): URL {
  const rest = raw.slice(raw.indexOf('//') + 2);
  const url = new URL(`https://${rest}`);
  if (!url.port) url.port = String(SYSLOG_TLS_PORT);
  return url;
}

/** The URL's format: what the caller said, else what its scheme implies. */
export function formatOf(url: string, given: LogDrainFormat | null | undefined): LogDrainFormat {
  if (given) return given;
  return url.toLowerCase().startsWith('syslog') ? LogDrainFormat.SYSLOG : LogDrainFormat.NDJSON;
}

/**
 * Checks a drain URL for its format: `https://…` for NDJSON, `syslog+tls://host[:port]` for
 * syslog; no credentials; a public address unless allow-listed (HATCHERY_WEBHOOK_ALLOW_HOSTS).
 * Returns the URL as stored.
 */
export async function validateDrainUrl(raw: unknown, format: LogDrainFormat, guard: AddressGuard): Promise<string> {
  if (typeof raw !== 'string' || raw.length > MAX_URL) throw ValidationFailed.field('url', `must be a URL of at most ${MAX_URL} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw ValidationFailed.field('url', format === LogDrainFormat.SYSLOG ? 'must be a syslog+tls://host:port URL' : 'must be an absolute https URL');
  }
  let target: URL;
  if (format === LogDrainFormat.SYSLOG) {
    if (url.protocol !== SYSLOG_SCHEME) throw ValidationFailed.field('url', 'must use syslog+tls (syslog over TLS) for the syslog format');
    try {
      target = syslogTarget(raw);
    } catch {
      throw ValidationFailed.field('url', 'must be a syslog+tls://host:port URL');
    }
    if (!target.hostname) throw ValidationFailed.field('url', 'must name a host');
    if ((url.pathname && url.pathname !== '/') || url.search || url.hash)
      throw ValidationFailed.field('url', 'must be syslog+tls://host:port, without a path or query');
  } else {
    if (url.protocol !== 'https:') throw ValidationFailed.field('url', 'must use https for the ndjson format');
    target = url;
  }
  if (url.username || url.password || target.username || target.password) throw ValidationFailed.field('url', 'must not carry credentials');
  const refused = await guard.refusal(target);
  if (refused) throw ValidationFailed.field('url', `must not point to a private, loopback or internal address: ${refused}`);
  return format === LogDrainFormat.SYSLOG ? `syslog+tls://${target.host}` : url.toString();
}
