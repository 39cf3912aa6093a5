import type { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { HostSeparator1795519548387 } from '../../migrations/1795519548387-HostSeparator';
import { dataSource, emptyDatabase } from '../support/migration-db';

describe('migration HostSeparator: existing rows move to `--` hosts', () => {
  const at = migrations.indexOf(HostSeparator1795519548387);
  let db: Awaited<ReturnType<typeof emptyDatabase>>;
  let ds: DataSource;

  beforeAll(async () => {
    expect(at).toBeGreaterThan(0);
    db = await emptyDatabase('hatchery_mig');
    ds = dataSource(db.url, at);
    await ds.initialize();
    await ds.runMigrations();
    const t = '2026-11-01T00:00:00.000Z';
    await ds.query(`INSERT INTO users (id, email, created_at) VALUES ('usr_a', 'a@example.com', $1), ('usr_b', 'b@example.com', $1)`, [t]);
    await ds.query(
      `INSERT INTO apps (id, slug, owner_id, created_at) VALUES
        ('app_1', 'alice-egg', 'usr_a', $1), ('app_2', 'alice-egg-pr-1', 'usr_b', $1),
        ('app_3', 'bob--shop', 'usr_b', $1), ('app_4', 'bob-shop', 'usr_a', $1), ('app_5', 'x---y', 'usr_a', $1)`,
      [t],
    );
    await ds.query(
      `INSERT INTO deployments (id, app_id, status, url, memory_mb, created_by_id, created_at, updated_at) VALUES
        ('dep_01aaaaaaaaaaaaaaaaabcdefgh', 'app_1', 'live', 'https://alice-egg-bcdefgh.hatchery.run', 256, 'usr_a', $1, $1),
        ('dep_01aaaaaaaaaaaaaaaa12345678', 'app_3', 'live', 'https://bob--shop-12345678.hatchery.run', 256, 'usr_b', $1, $1)`,
      [t],
    );
    await ds.query(
      `INSERT INTO previews (id, app_id, pr_number, slug, url, status, expires_at, created_at, updated_at) VALUES
        ('prv_1', 'app_1', 1, 'alice-egg-pr-1', 'https://alice-egg-pr-1.hatchery.run', 'ready', $1, $1, $1),
        ('prv_2', 'app_3', 7, 'bob--shop-pr-7', 'https://bob--shop-pr-7.hatchery.run', 'ready', $1, $1, $1)`,
      [t],
    );
    await ds.destroy();
    ds = dataSource(db.url, at + 1);
    await ds.initialize();
    await ds.runMigrations();
  });
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it('renames slugs with `--` (to a free name) and rewrites deployment and preview URLs', async () => {
    const slugs = Object.fromEntries((await ds.query('SELECT id, slug FROM apps')).map((r: { id: string; slug: string }) => [r.id, r.slug]));
    expect(slugs).toEqual({ app_1: 'alice-egg', app_2: 'alice-egg-pr-1', app_3: 'bob-shop-2', app_4: 'bob-shop', app_5: 'x-y' });
    const urls = Object.fromEntries((await ds.query('SELECT id, url FROM deployments')).map((r: { id: string; url: string }) => [r.id, r.url]));
    expect(urls).toEqual({
      dep_01aaaaaaaaaaaaaaaaabcdefgh: 'https://alice-egg--abcdefgh.hatchery.run',
      dep_01aaaaaaaaaaaaaaaa12345678: 'https://bob-shop-2--12345678.hatchery.run',
    });
    const previews = await ds.query('SELECT id, slug, url FROM previews ORDER BY id');
    expect(previews).toEqual([
      { id: 'prv_1', slug: 'alice-egg-pr-1', url: 'https://alice-egg--pr-1.hatchery.run' },
      { id: 'prv_2', slug: 'bob-shop-2-pr-7', url: 'https://bob-shop-2--pr-7.hatchery.run' },
    ]);
  });

  it('the database refuses a slug with `--` from now on', async () => {
    await expect(ds.query(`INSERT INTO apps (id, slug, owner_id, created_at) VALUES ('app_9', 'a--b', 'usr_a', now())`)).rejects.toThrow(
      /apps_slug_single_dashes/,
    );
  });

  it('down() restores the old URL forms', async () => {
    await ds.undoLastMigration();
    const [dep] = await ds.query(`SELECT url FROM deployments WHERE app_id = 'app_1'`);
    expect(dep.url).toBe('https://alice-egg-abcdefgh.hatchery.run');
    const [prv] = await ds.query(`SELECT url FROM previews WHERE id = 'prv_1'`);
    expect(prv.url).toBe('https://alice-egg-pr-1.hatchery.run');
    await ds.query(`INSERT INTO apps (id, slug, owner_id, created_at) VALUES ('app_9', 'a--b', 'usr_a', now())`);
  });
});
