import { Client } from 'pg';
import { GuardedClient } from '../../src/db/guarded-client';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { createTestDatabase, TestDatabase } from '../support/db';

/**
 * pg-boss's own pool has the gateway's statement timeout: a job query stuck behind a lock fails
 * after it instead of holding a connection (and the caller) forever.
 */
describe('pg-boss statement timeout', () => {
  let db: TestDatabase;
  let jobs: Jobs | undefined;
  let locker: Client | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await jobs?.stop(1000);
    await db.drop();
  });

  it('a send blocked by a table lock fails with a statement timeout; it works again once the lock is gone', async () => {
    jobs = new Jobs(db.url, createLogger('silent'), undefined, { statementTimeoutMs: 300 });
    await jobs.start([{ name: 'timeout-probe', handler: () => Promise.resolve() }]);
    await jobs.send('timeout-probe', 60_000);
    // Its pool makes connections that cannot end the process with a stray 'error' (test/faults/stray-pg-error).
    const pool = ((jobs as unknown as { boss: { getDb(): unknown } }).boss.getDb() as { pool: { options: { Client?: unknown } } }).pool;
    expect(pool.options.Client).toBe(GuardedClient);

    locker = new Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE pgboss.job IN ACCESS EXCLUSIVE MODE');

    await expect(jobs.send('timeout-probe', 120_000)).rejects.toThrow(/statement timeout/);

    await locker.query('ROLLBACK');
    await expect(jobs.send('timeout-probe', 180_000)).resolves.toBeUndefined();
  });
});
