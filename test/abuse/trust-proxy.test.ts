import { ConfigError, loadConfig } from '../../src/config';
import { startGateway, TestGateway } from '../support/gateway';
import { openStream, request } from './helpers';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * Per-IP rate limits behind a proxy (HATCHERY_TRUST_PROXY): the client is the address a trusted
 * proxy puts in X-Forwarded-For; from anyone else the header is ignored. 2 anonymous requests a
 * minute per IP; each test uses addresses of its own.
 */
const ANON_PER_MIN = 2;

const anon = (t: TestGateway, from: string, forwardedFor?: string) =>
  request(t.url, 'GET', '/deployments', { from, headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} });

/** Opens graphql-ws from `from` with an X-Forwarded-For header; resolves with the close code. */
function wsClosedWith(t: TestGateway, from: string, forwardedFor: string): Promise<number> {
  class Forwarded extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { localAddress: from, headers: { 'x-forwarded-for': forwardedFor } });
    }
  }
  return new Promise((resolve) => {
    const client = createClient({
      url: t.url.replace(/^http/, 'ws') + '/graphql',
      webSocketImpl: Forwarded,
      retryAttempts: 0,
      lazy: true,
      on: { closed: (e) => resolve((e as { code: number }).code) },
    });
    openStream(client, '{ __typename }');
  });
}

describe('HATCHERY_TRUST_PROXY', () => {
  describe('unset (the default)', () => {
    let t: TestGateway;
    beforeAll(async () => {
      t = await startGateway({ HATCHERY_RATE_LIMIT_ANON_PER_MIN: String(ANON_PER_MIN) });
    });
    afterAll(() => t.stop());

    it('ignores X-Forwarded-For: a client cannot buy a fresh budget by writing another address', async () => {
      const from = '127.0.1.1';
      for (let i = 0; i < ANON_PER_MIN; i++) expect((await anon(t, from, `198.51.100.${i + 1}`)).status).toBe(401);
      const res = await anon(t, from, '198.51.100.99');
      expect(res.status).toBe(429);
      expect(res.body.code).toBe('rate_limited');
    });
  });

  describe('naming the proxy 127.0.2.1', () => {
    let t: TestGateway;
    const proxy = '127.0.2.1';
    beforeAll(async () => {
      t = await startGateway({ HATCHERY_RATE_LIMIT_ANON_PER_MIN: String(ANON_PER_MIN), HATCHERY_TRUST_PROXY: proxy });
    });
    afterAll(() => t.stop());

    it('counts each forwarded client on its own, and the proxy itself not at all', async () => {
      for (const client of ['203.0.113.1', '203.0.113.2']) {
        for (let i = 0; i < ANON_PER_MIN; i++) expect((await anon(t, proxy, client)).status).toBe(401);
        expect((await anon(t, proxy, client)).status).toBe(429);
      }
      // A third client behind the same proxy still has its whole budget.
      expect((await anon(t, proxy, '203.0.113.3')).status).toBe(401);
      // The rightmost untrusted address is the client: a spoofed entry left of it changes nothing.
      expect((await anon(t, proxy, '203.0.113.77, 203.0.113.1')).status).toBe(429);
    });

    it('ignores the header from a peer it does not trust', async () => {
      const other = '127.0.2.2';
      for (let i = 0; i < ANON_PER_MIN; i++) expect((await anon(t, other, `203.0.113.${10 + i}`)).status).toBe(401);
      expect((await anon(t, other, '203.0.113.20')).status).toBe(429);
      // …and the forwarded address it wrote was not charged.
      expect((await anon(t, proxy, '203.0.113.10')).status).toBe(401);
    });

    it('graphql-ws: the upgrade request is counted under the forwarded client too', async () => {
      const client = '203.0.113.40';
      for (let i = 0; i < ANON_PER_MIN; i++) expect((await anon(t, proxy, client)).status).toBe(401);
      expect(await wsClosedWith(t, proxy, client)).toBe(4429);
      // Another forwarded client through the same proxy gets in (and, with no token, 4401).
      expect(await wsClosedWith(t, proxy, '203.0.113.41')).toBe(4401);
    });
  });

  it('takes a hop count or a list of addresses and ranges; anything else fails the start naming the setting', () => {
    expect(loadConfig({ HATCHERY_TRUST_PROXY: '' }).trustProxy).toBe(false);
    expect(loadConfig({ HATCHERY_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ HATCHERY_TRUST_PROXY: '10.0.0.0/8, loopback,::1' }).trustProxy).toEqual(['10.0.0.0/8', 'loopback', '::1']);
    for (const bad of ['yes', '10.0.0.0/99', '300.1.1.1', '99']) {
      expect(() => loadConfig({ HATCHERY_TRUST_PROXY: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ HATCHERY_TRUST_PROXY: bad })).toThrow(/HATCHERY_TRUST_PROXY/);
    }
  });
});
