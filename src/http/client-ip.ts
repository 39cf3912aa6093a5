import type { IncomingMessage } from 'node:http';
import proxyaddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';

/**
 * Which peers may tell the gateway the client's address in `X-Forwarded-For`
 * (HATCHERY_TRUST_PROXY): none (the default: the TCP peer is the client), a number of proxy hops
 * in front of the gateway, or a list of proxy addresses and CIDR ranges (and proxy-addr's names
 * `loopback`, `linklocal`, `uniquelocal`). Per-IP rate limits count the address this yields.
 */
export type TrustProxy = false | number | string[];

export type TrustFn = (address: string, hop: number) => boolean;

const NAMED = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Parses HATCHERY_TRUST_PROXY; throws with the offending part named. */
export function parseTrustProxy(raw: string | undefined): TrustProxy {
  const value = (raw ?? '').trim();
  if (value === '' || value === 'false' || value === '0') return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 32) throw new Error(`a hop count is at most 32, got ${hops}`);
    return hops;
  }
  return value.split(',').map((part) => {
    const entry = part.trim();
    if (NAMED.has(entry)) return entry;
    if (entry.includes('/') ? !isCidr(entry) : !ipaddr.isValid(entry)) {
      throw new Error(`"${entry}" is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal`);
    }
    return entry;
  });
}

function isCidr(s: string): boolean {
  try {
    ipaddr.parseCIDR(s);
    return true;
  } catch {
    return false;
  }
}

/** The trust function for Fastify's `trustProxy` and for graphql-ws upgrade requests alike. */
export function trustFunction(trust: TrustProxy): TrustFn {
  if (trust === false) return () => false;
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return proxyaddr.compile(trust);
}

/** The client's address for a raw request (a WebSocket upgrade), by the same rule as Fastify's `req.ip`. */
export function clientAddress(req: IncomingMessage, trust: TrustFn): string {
  if (!req.socket.remoteAddress) return 'unknown';
  return proxyaddr(req, trust);
}
