import Redis from 'ioredis';
import { unique } from '../support/factories';
import { describeSharedEvents } from './shared-events';

const REDIS_URL = 'redis://127.0.0.1:6379';
// Test runs share the Redis: this file's gateways use a channel of their own.
const prefix = `${unique('test')}:`;
const channel = `${prefix}hatchery_events`;

async function withRedis<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

/** With REDIS_URL, events travel between gateways by Redis pub/sub instead. */
describeSharedEvents('events shared by two gateways over Redis pub/sub', {
  env: { REDIS_URL, HATCHERY_REDIS_PREFIX: prefix },
  listeners: () =>
    withRedis(async (redis) => {
      const [, n] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
      return Number(n);
    }),
  cutListeners: () =>
    withRedis(async (redis) => {
      const clients = String(await redis.client('LIST'))
        .split('\n')
        .filter((l) => l.includes(` name=hatchery-events-sub:${channel} `));
      for (const c of clients) await redis.client('KILL', 'ID', /\bid=(\d+)/.exec(c)![1]);
    }),
});
