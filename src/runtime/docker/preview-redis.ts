import { createHmac } from 'node:crypto';
import Redis from 'ioredis';

/**
 * A Redis ACL user per preview, on the gateway's Redis (`REDIS_URL`): it may touch only keys and
 * channels under the preview's prefix, and none of the commands that would reach past it (every
 * `@dangerous` and `@admin` one: FLUSHALL, KEYS, MONITOR, CONFIG…, and those that list or count
 * the whole keyspace, SCAN, RANDOMKEY, DBSIZE). RESET, which no ACL rule can deny, is refused by
 * the preview's relay. Its password is derived from a secret and the preview id, like the database's.
 */
export class PreviewRedis {
  constructor(
    private readonly url: string,
    private readonly secret: Buffer,
  ) {}

  static userOf(previewId: string): string {
    return `hatchery-${previewId.toLowerCase()}`;
  }

  /** Where the preview's keys and channels live: `<preview id>:`. */
  static prefixOf(previewId: string): string {
    return `${previewId.toLowerCase()}:`;
  }

  passwordOf(previewId: string): string {
    return createHmac('sha256', this.secret).update(`preview-redis:${previewId}`).digest('hex');
  }

  /** The server the preview's relay connects to. */
  get server(): { host: string; port: number } {
    const u = new URL(this.url);
    return { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
  }

  /** Creates (or resets to what it must be) the preview's user; returns its name. */
  async create(previewId: string): Promise<string> {
    const user = PreviewRedis.userOf(previewId);
    const prefix = PreviewRedis.prefixOf(previewId);
    await this.with((r) =>
      r.call(
        'ACL',
        'SETUSER',
        user,
        'reset',
        'on',
        `>${this.passwordOf(previewId)}`,
        `~${prefix}*`,
        `&${prefix}*`,
        '+@all',
        '-@dangerous',
        '-@admin',
        '-scan',
        '-randomkey',
        '-dbsize',
        // Other databases are outside the prefix's reach and the teardown's.
        '-select',
        '-move',
        '-copy',
      ),
    );
    return user;
  }

  /** Removes the user, cuts its connections and deletes the preview's keys; what is gone already is not an error. */
  async drop(user: string): Promise<void> {
    if (!/^hatchery-prv_[a-z0-9]+$/.test(user)) throw new Error(`not a preview's Redis user: ${user}`);
    const prefix = `${user.slice('hatchery-'.length)}:`;
    await this.with(async (r) => {
      await r.call('ACL', 'DELUSER', user);
      await r.call('CLIENT', 'KILL', 'USER', user).catch(() => undefined); // none connected
      let cursor = '0';
      do {
        const [next, keys] = (await r.call('SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', '1000')) as [string, string[]];
        if (keys.length) await r.call('UNLINK', ...keys);
        cursor = next;
      } while (cursor !== '0');
    });
  }

  private async with<T>(work: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 10_000 });
    await r.connect();
    try {
      return await work(r);
    } finally {
      r.disconnect();
    }
  }
}
