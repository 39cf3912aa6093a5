import dns from 'node:dns';
import net from 'node:net';

type Answer = { address: string; family: 4 | 6 };

const toAnswer = (address: string): Answer => ({ address, family: net.isIPv6(address) ? 6 : 4 });

/**
 * A stand-in for DNS, installed with jest.spyOn on both `dns.promises.lookup` (what the
 * registration pre-check uses) and `dns.lookup` (what the HTTP client's connect-time `lookup`
 * uses, and Node's default when no `lookup` is given). Names get the answers the test sets, per
 * API, so a name can resolve public for the pre-check and to loopback when the client connects
 * (DNS rebinding). IP literals answer themselves, `localhost` is 127.0.0.1, and every other name
 * fails with ENOTFOUND: nothing ever reaches a real resolver.
 */
export class FakeDns {
  private readonly precheck = new Map<string, Answer[]>();
  private readonly connect = new Map<string, Answer[]>();
  /** Every name asked, per API, in order. */
  readonly asked: Array<{ api: 'promises' | 'callback'; host: string }> = [];
  private spies: jest.SpyInstance[] = [];

  /** `host` resolves to `addresses` through both APIs. */
  set(host: string, addresses: string[]): void {
    this.precheck.set(host.toLowerCase(), addresses.map(toAnswer));
    this.connect.set(host.toLowerCase(), addresses.map(toAnswer));
  }

  /** `host` resolves to `precheck` through dns.promises.lookup and to `connect` through dns.lookup. */
  rebind(host: string, precheck: string[], connect: string[]): void {
    this.precheck.set(host.toLowerCase(), precheck.map(toAnswer));
    this.connect.set(host.toLowerCase(), connect.map(toAnswer));
  }

  /** How many times `host` was asked through `api`. */
  count(api: 'promises' | 'callback', host: string): number {
    return this.asked.filter((a) => a.api === api && a.host.toLowerCase() === host.toLowerCase()).length;
  }

  private answer(table: Map<string, Answer[]>, host: string, family: number): Answer[] | null {
    if (net.isIP(host)) return [toAnswer(host)];
    const list = host.toLowerCase() === 'localhost' ? [toAnswer('127.0.0.1')] : table.get(host.toLowerCase());
    if (!list) return null;
    const filtered = family === 4 || family === 6 ? list.filter((a) => a.family === family) : list;
    return filtered.length ? filtered : null;
  }

  private static notFound(host: string): NodeJS.ErrnoException {
    return Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND', hostname: host });
  }

  install(): this {
    const promisesLookup = (host: string, options?: dns.LookupOptions | number): Promise<unknown> => {
      this.asked.push({ api: 'promises', host });
      const opts = typeof options === 'number' ? { family: options } : (options ?? {});
      const list = this.answer(this.precheck, host, Number(opts.family ?? 0));
      if (!list) return Promise.reject(FakeDns.notFound(host));
      return Promise.resolve(opts.all ? list : list[0]);
    };
    const callbackLookup = (host: string, options: unknown, callback?: unknown): void => {
      const cb = (typeof options === 'function' ? options : callback) as (err: Error | null, address?: unknown, family?: number) => void;
      const opts = (typeof options === 'number' ? { family: options } : typeof options === 'object' && options ? options : {}) as dns.LookupOptions;
      this.asked.push({ api: 'callback', host });
      const list = this.answer(this.connect, host, Number(opts.family ?? 0));
      process.nextTick(() => {
        if (!list) return cb(FakeDns.notFound(host));
        if (opts.all) return cb(null, list);
        return cb(null, list[0].address, list[0].family);
      });
    };
    this.spies = [
      jest.spyOn(dns.promises, 'lookup').mockImplementation(promisesLookup as unknown as typeof dns.promises.lookup),
      jest.spyOn(dns, 'lookup').mockImplementation(callbackLookup),
    ];
    return this;
  }

  restore(): void {
    for (const s of this.spies) s.mockRestore();
    this.spies = [];
  }
}
