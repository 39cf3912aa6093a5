import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/data-source';
import { RowLease } from '../../src/db/lease';
import { createTestDatabase, TestDatabase } from '../support/db';

/** The one lease helper builds, preview builds and egg runners share (src/db/lease.ts). */
describe('RowLease', () => {
  let db: TestDatabase;
  let q: DataSource;
  const t0 = new Date('2026-11-24T12:00:00.000Z');
  const at = (s: number) => new Date(t0.getTime() + s * 1000);
  const builds = new RowLease({ table: 'jobs_t', until: 'lease_until', scope: "status = 'building'" });
  const runners = new RowLease({ table: 'jobs_t', until: 'lease_until', holder: 'holder', scope: 'status IS NOT NULL' });
  const leases = async () =>
    Object.fromEntries(
      (await q.query<Array<{ id: string; holder: string | null; lease_until: Date | null }>>('SELECT id, holder, lease_until FROM jobs_t ORDER BY id')).map(
        (r) => [r.id, [r.holder, r.lease_until?.toISOString() ?? null]],
      ),
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    q = createDataSource(db.url);
    await q.initialize();
  });
  beforeEach(async () => {
    await q.query('DROP TABLE IF EXISTS jobs_t; CREATE TABLE jobs_t (id text PRIMARY KEY, status text, holder text, lease_until timestamptz)');
    await q.query(
      `INSERT INTO jobs_t VALUES ('a', 'building', NULL, NULL), ('b', 'building', NULL, $1), ('c', 'building', NULL, $2), ('d', 'live', NULL, NULL)`,
      [at(-1), at(10)],
    );
  });
  afterAll(async () => {
    await q.destroy();
    await db.drop();
  });

  it('claims rows in scope that nobody holds or whose lease lapsed, and only those', async () => {
    const claimed = await builds.claim(q, { until: at(30), now: t0 });
    expect(claimed.map((r) => r.id).sort()).toEqual(['a', 'b']);
    expect(await leases()).toMatchObject({
      a: [null, at(30).toISOString()],
      b: [null, at(30).toISOString()],
      c: [null, at(10).toISOString()],
      d: [null, null],
    });
    // Claimed now, they are held: a second claimant at the same moment gets nothing.
    expect(await builds.claim(q, { until: at(60), now: t0 })).toEqual([]);
    // Once the lease lapses they can be claimed again.
    expect((await builds.claim(q, { until: at(90), now: at(31) })).map((r) => r.id).sort()).toEqual(['a', 'b', 'c']);
  });

  it('renews only rows still in scope, and releases them for the next claimant', async () => {
    await builds.claim(q, { until: at(30), now: t0, ids: ['a'] });
    await q.query(`UPDATE jobs_t SET status = 'live' WHERE id = 'b'`);
    await builds.renew(q, ['a', 'b'], at(45));
    expect(await leases()).toMatchObject({ a: [null, at(45).toISOString()], b: [null, at(-1).toISOString()] });
    expect(await builds.release(q, { ids: ['a', 'b'] })).toEqual(['a']);
    expect((await builds.claim(q, { until: at(50), now: t0, ids: ['a'] })).map((r) => r.id)).toEqual(['a']);
  });

  it('with a holder: a holder keeps what it holds, another waits for the lapse; release lets go of all it holds', async () => {
    expect((await runners.claim(q, { until: at(30), now: t0, holder: 'gw1', ids: ['a', 'd'] })).map((r) => r.id).sort()).toEqual(['a', 'd']);
    expect(await runners.claim(q, { until: at(30), now: at(1), holder: 'gw2', ids: ['a'] })).toEqual([]);
    // The holder renews by claiming again, and can ask for more columns back.
    expect(await runners.claim<{ id: string; status: string }>(q, { until: at(40), now: at(1), holder: 'gw1', ids: ['a'], returning: 'id, status' })).toEqual([
      { id: 'a', status: 'building' },
    ]);
    expect((await runners.claim(q, { until: at(90), now: at(41), holder: 'gw2', ids: ['a'] })).map((r) => r.id)).toEqual(['a']);
    expect((await runners.release(q, { holder: 'gw1' })).sort()).toEqual(['d']);
    expect(await leases()).toMatchObject({ a: ['gw2', at(90).toISOString()], d: [null, null] });
  });
});
