import type { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { newestEggLineAt } from '../../src/modules/deployments/deployments.service';
import { dataSource, emptyDatabase, seedLiveDeployment } from '../support/migration-db';

/**
 * Where a runner adopting a replica's container starts passing lines on: after the newest line that
 * replica wrote. The platform's own lines (request lines, notes) are stamped by the gateway's clock
 * and may be stored ahead of container lines written before them: they never count.
 */
describe('newestEggLineAt: the newest stored line of the egg’s own output', () => {
  let db: Awaited<ReturnType<typeof emptyDatabase>>;
  let ds: DataSource;
  const dep = 'dep_01aaaaaaaaaaaaaaaaabcdefgh';
  const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 12, 0, s));
  let seq = 0;
  const line = (s: number, message: string, opts: { type?: string; stream?: string; replica?: number } = {}) =>
    ds.query(`INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message, stream, replica) VALUES ($1, 'app_1', $2, $3, $4, $5, $6, $7)`, [
      dep,
      ++seq,
      at(s),
      opts.type ?? 'runtime',
      message,
      opts.stream ?? null,
      opts.replica ?? null,
    ]);

  beforeAll(async () => {
    db = await emptyDatabase('hatchery_eggline');
    ds = dataSource(db.url, migrations.length);
    await ds.initialize();
    await ds.runMigrations();
    await seedLiveDeployment(ds, dep, at(0));
  });
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it('none stored: null; build lines and the platform’s runtime lines never count', async () => {
    expect(await newestEggLineAt(ds, dep, 1)).toBeNull();
    await line(50, 'Step 1/2 : FROM node', { type: 'build', stream: 'stdout', replica: 1 });
    await line(51, 'GET / 200 3ms');
    await line(52, '==> egg exited with code 1; restarting in 1 s');
    expect(await newestEggLineAt(ds, dep, 1)).toBeNull();
    expect(await newestEggLineAt(ds, dep)).toBeNull();
  });

  it('lines stored before lines named their replica: the newest with a stream, until a line names one', async () => {
    await line(10, 'listening', { stream: 'stdout' });
    expect(await newestEggLineAt(ds, dep, 1)).toEqual(at(10));
    expect(await newestEggLineAt(ds, dep)).toEqual(at(10));
  });

  it('each replica’s own newest line; any replica’s for a runner following them all; the platform’s later lines left out', async () => {
    await line(20, 'request /a', { stream: 'stdout', replica: 1 });
    await line(30, '[replica 2] request /b', { stream: 'stderr', replica: 2 });
    await line(40, 'GET /c 200 1ms');
    expect(await newestEggLineAt(ds, dep, 1)).toEqual(at(20));
    expect(await newestEggLineAt(ds, dep, 2)).toEqual(at(30));
    expect(await newestEggLineAt(ds, dep)).toEqual(at(30));
    // Another deployment's lines are its own.
    expect(await newestEggLineAt(ds, 'dep_01bbbbbbbbbbbbbbbbbbcdefgh', 1)).toBeNull();
  });
});
