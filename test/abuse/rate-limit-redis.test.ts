import Redis from 'ioredis';
import { buildApp, Gateway } from '../../src/app';
import { RateLimiter } from '../../src/http/rate-limit';
import { createLogger } from '../../src/log';
import { startGateway, TestGateway } from '../support/gateway';
import { makeUser, unique } from '../support/factories';
import { request } from './helpers';

/**
 * Two gateways on one database: with REDIS_URL they share each token's budget, without it each
 * counts its own, and a Redis that does not answer leaves each gateway limiting on its own.
 */
const REDIS_URL = 'redis://127.0.0.1:6379';
const PER_MIN = 4;

async function pair(env: Record<string, string>): Promise<{ t: TestGateway; second: Gateway; stop(): Promise<void> }> {
  const t = await startGateway({ HATCHERY_RATE_LIMIT_PER_MIN: String(PER_MIN), HATCHERY_RATE_LIMIT_ANON_PER_MIN: '2', ...env });
  const second = buildApp(t.config);
  await second.start(0);
  return {
    t,
    second,
    async stop() {
      await second.stop();
      await t.stop();
    },
  };
}

describe('rate limits across gateways', () => {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  const prefixes: string[] = [];
  const prefix = () => {
    const p = `${unique('test-rl')}:`;
    prefixes.push(p);
    return p;
  };

  beforeAll(() => redis.connect());
  afterAll(async () => {
    for (const p of prefixes) {
      const keys = await redis.keys(`${p}*`);
      if (keys.length) await redis.del(...keys);
    }
    redis.disconnect();
  });

  it('with Redis, a token’s budget is shared: alternating gateways count down one counter', async () => {
    const keyPrefix = prefix();
    const gw = await pair({ REDIS_URL, HATCHERY_REDIS_PREFIX: keyPrefix });
    try {
      const user = await makeUser(gw.t.gateway);
      const urls = [gw.t.url, gw.second.url];
      for (let i = 1; i <= PER_MIN; i++) {
        const res = await request(urls[i % 2], 'GET', '/deployments', { token: user.token });
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-remaining']).toBe(String(PER_MIN - i));
      }
      for (const url of urls) {
        const res = await request(url, 'GET', '/deployments', { token: user.token });
        expect(res.status).toBe(429);
        expect(res.body.code).toBe('rate_limited');
      }
      // The counters live in Redis under the prefix, with the window as their expiry; the token itself is not stored.
      // The token's counter saw every request; the account's only those whose token was looked up.
      const keys = (await redis.keys(`${keyPrefix}rl:*`)).sort();
      expect(keys).toEqual([`${keyPrefix}rl:acct:${user.id}`, expect.stringMatching(new RegExp(`^${keyPrefix}rl:tok:[0-9a-f]{32}$`))]);
      expect(keys.join()).not.toContain(user.token);
      expect(Number(await redis.get(keys[1]))).toBe(PER_MIN + 2);
      expect(Number(await redis.get(keys[0]))).toBe(PER_MIN);
      for (const key of keys) {
        const ttl = await redis.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
      // Unauthenticated requests are shared per IP as well.
      for (const url of urls) expect((await request(url, 'GET', '/deployments', { from: '127.0.0.6' })).status).toBe(401);
      expect((await request(gw.t.url, 'GET', '/deployments', { from: '127.0.0.6' })).status).toBe(429);
    } finally {
      await gw.stop();
    }
  });

  it('without Redis, each gateway counts on its own', async () => {
    const gw = await pair({});
    try {
      const user = await makeUser(gw.t.gateway);
      for (const url of [gw.t.url, gw.second.url]) {
        for (let i = 1; i <= PER_MIN; i++) expect((await request(url, 'GET', '/deployments', { token: user.token })).status).toBe(200);
        expect((await request(url, 'GET', '/deployments', { token: user.token })).status).toBe(429);
      }
    } finally {
      await gw.stop();
    }
  });

  it('when Redis does not answer, each gateway limits on its own', async () => {
    // Port 1 on loopback: connection refused.
    const limiter = new RateLimiter({ perMin: PER_MIN, anonPerMin: 2, redisUrl: 'redis://127.0.0.1:1', redisPrefix: prefix(), log: createLogger('silent') });
    await limiter.start();
    try {
      for (let i = 1; i <= PER_MIN; i++) expect(await limiter.take('hatch_x', '127.0.0.1')).toMatchObject({ allowed: true, remaining: PER_MIN - i });
      expect(await limiter.take('hatch_x', '127.0.0.1')).toMatchObject({ allowed: false, remaining: 0 });
      expect(await limiter.take('hatch_y', '127.0.0.1')).toMatchObject({ allowed: true });
    } finally {
      await limiter.close();
    }
  });
});
