import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { within } from '../../timeout';

/** For allow-list matching, an IPv4-mapped IPv6 address is the IPv4 address it maps. */
function canonical(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const parsed = ipaddr.parse(address);
  return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
}

/**
 * Only globally routable unicast addresses are webhook targets. IPv4-mapped IPv6 is refused
 * outright (whatever it maps), and so is the rest of ::/96 (the deprecated IPv4-compatible form
 * such as ::127.0.0.1, besides :: and ::1).
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress() || v6.parts.slice(0, 6).every((p) => p === 0)) return false;
  }
  return parsed.range() === 'unicast';
}

/** The address a URL host names literally (brackets stripped, normalised), or null for a host name. */
export function literalAddress(hostname: string): string | null {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(bare) ? canonical(bare).toNormalizedString() : null;
}

export class ForbiddenTarget extends Error {}

/**
 * The one refusal text, for literals and names alike: it never says what a name resolved to,
 * nor whether it was a name, so refusals cannot be used to map internal DNS.
 */
export function notAllowed(hostname: string): string {
  return `${hostname} is not an allowed address`;
}

/** RFC 6761: names under .invalid never resolve, and are answered at once without asking DNS. */
function isInvalidName(host: string): boolean {
  return /(^|\.)invalid\.?$/i.test(host);
}

function notFound(host: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', hostname: host });
}

/** A registration waits this long for DNS; an unanswered name passes, as an unresolvable one does. */
const LOOKUP_TIMEOUT_MS = 5000;

/**
 * Decides which webhook targets the gateway may connect to. Private, loopback, link-local,
 * CGNAT, unique-local, unspecified, multicast and other non-unicast addresses are refused, both
 * when a webhook is registered and again at every connection (so a name that later resolves to
 * an internal address is refused too). HATCHERY_WEBHOOK_ALLOW_HOSTS exempts operators' hosts.
 */
export class AddressGuard {
  private readonly names = new Set<string>();
  private readonly addresses = new Set<string>();

  constructor(allowHosts: readonly string[]) {
    for (const entry of allowHosts) {
      const literal = literalAddress(entry.trim());
      if (literal) this.addresses.add(literal);
      else if (entry.trim()) this.names.add(entry.trim().toLowerCase());
    }
  }

  /** An allow-listed host: its name as written (any case), or its address in any notation. */
  isExempt(hostname: string): boolean {
    const literal = literalAddress(hostname);
    return literal ? this.addresses.has(literal) : this.names.has(hostname.toLowerCase());
  }

  /** Why the target may not be used (`notAllowed`), or null. Resolves host names; an unresolvable one passes (delivery will fail). */
  async refusal(url: URL): Promise<string | null> {
    if (this.isExempt(url.hostname)) return null;
    const literal = literalAddress(url.hostname);
    if (literal) return isPublicAddress(literal) ? null : notAllowed(url.hostname);
    let resolved: dns.LookupAddress[];
    try {
      if (isInvalidName(url.hostname)) throw notFound(url.hostname);
      resolved = await within(dns.promises.lookup(url.hostname, { all: true, verbatim: true }), LOOKUP_TIMEOUT_MS, () => {
        throw new Error(`DNS lookup timed out after ${LOOKUP_TIMEOUT_MS} ms`);
      });
    } catch {
      return null;
    }
    return resolved.some((r) => !isPublicAddress(r.address)) ? notAllowed(url.hostname) : null;
  }

  /**
   * A `lookup` for the HTTP client that refuses non-public answers at connect time, so DNS
   * rebinding cannot reach an internal address. Node does not call `lookup` for IP literals:
   * those are checked by `refusal` before each request instead.
   */
  lookupFor(hostname: string): LookupFunction {
    const exempt = this.isExempt(hostname);
    return (host, options, callback) => {
      if (isInvalidName(host)) return callback(notFound(host), '', 0);
      dns.lookup(host, { ...options, all: true }, (err, addresses) => {
        if (err) return callback(err, '', 0);
        const list = addresses;
        if (!exempt && list.some((a) => !isPublicAddress(a.address))) return callback(new ForbiddenTarget(notAllowed(host)), '', 0);
        if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
        return callback(null, list[0].address, list[0].family);
      });
    };
  }
}
