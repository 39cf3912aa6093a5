import type { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { LogSearch1795556922481 } from '../../migrations/1795556922481-LogSearch';
import { LogPartitions1795559438308 } from '../../migrations/1795559438308-LogPartitions';
import { dataSource, emptyDatabase, seedLiveDeployment } from '../support/migration-db';

/**
 * The log migrations of issue 16 on a database with lines in it: LogSearch fills each line's egg
 * from its deployment; LogPartitions moves every line into the partition of everything before
 * today, keeps them readable in order, and its down migration gives back the plain table.
 */
describe('migrations LogSearch and LogPartitions keep the lines stored before them', () => {
  let db: Awaited<ReturnType<typeof emptyDatabase>>;
  let ds: DataSource;
  const dep = 'dep_01aaaaaaaaaaaaaaaaabcdefgh';

  beforeAll(async () => {
    db = await emptyDatabase('hatchery_logmig');
    ds = dataSource(db.url, migrations.indexOf(LogSearch1795556922481));
    await ds.initialize();
    await ds.runMigrations();
    const t = '2026-11-01T00:00:00.000Z';
    await seedLiveDeployment(ds, dep, t);
    await ds.query(
      `INSERT INTO log_lines (deployment_id, seq, timestamp, type, message)
       SELECT $1, i, $2::timestamptz + i * interval '1 second', 'runtime', 'line ' || i FROM generate_series(1, 50) AS i`,
      [dep, t],
    );
    await ds.destroy();
  });
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it('up: each line gets its egg, then lands in the partition before today, in order, searchable; down gives the plain table back', async () => {
    ds = dataSource(db.url, migrations.indexOf(LogPartitions1795559438308) + 1);
    await ds.initialize();
    await ds.runMigrations();
    const rows: Array<{ seq: number; app_id: string; message: string; day: string }> = await ds.query(
      `SELECT seq, app_id, message, day::text AS day FROM log_lines WHERE deployment_id = $1 ORDER BY seq`,
      [dep],
    );
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(rows.map((r) => r.app_id))).toEqual(new Set(['app_1']));
    const partitions: Array<{ name: string }> = await ds.query(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'log_lines'::regclass ORDER BY 1`,
    );
    const [{ today }] = await ds.query<Array<{ today: string }>>(`SELECT ((now() AT TIME ZONE 'UTC'))::date::text AS today`);
    expect(partitions.map((p) => p.name)).toContain(`log_lines_before_${today.replace(/-/g, '')}`);
    expect(partitions.map((p) => p.name)).toContain(`log_lines_d${today.replace(/-/g, '')}`);
    expect(partitions).toHaveLength(9);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM "log_lines_before_${today.replace(/-/g, '')}"`);
    expect(n).toBe(50);
    expect(rows.every((r) => r.day < today)).toBe(true);
    // A new line goes into today's partition by the column's default.
    await ds.query(`INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message) VALUES ($1, 'app_1', 51, now(), 'runtime', 'new')`, [dep]);
    const [{ day }] = await ds.query(`SELECT day::text AS day FROM log_lines WHERE deployment_id = $1 AND seq = 51`, [dep]);
    expect(day).toBe(today);
    const [{ found }] = await ds.query(`SELECT count(*)::int AS found FROM log_lines WHERE message ILIKE '%ine 4%'`);
    expect(found).toBe(11);

    await ds.undoLastMigration();
    const [{ kind }] = await ds.query(`SELECT relkind AS kind FROM pg_class WHERE relname = 'log_lines'`);
    expect(kind).toBe('r');
    const back: Array<{ seq: number }> = await ds.query(`SELECT seq FROM log_lines WHERE deployment_id = $1 ORDER BY seq`, [dep]);
    expect(back.map((r) => r.seq)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
  });
});
