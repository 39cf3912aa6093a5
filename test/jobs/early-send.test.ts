import { Client } from 'pg';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { createTestDatabase, TestDatabase } from '../support/db';

/** What the crash test caught: a resumed deployment woke the webhooks while the queues were still being made. */
describe('pg-boss queues and an early send', () => {
  let db: TestDatabase;
  let jobs: Jobs | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await jobs?.stop(1000);
    await db.drop();
  });

  it('a send made while start() still creates the queues waits for its queue, and is queued', async () => {
    jobs = new Jobs(db.url, createLogger('silent'), undefined);
    const names = ['early-a', 'early-b', 'early-c', 'early-last'];
    const starting = jobs.start(names.map((name) => ({ name, handler: () => Promise.resolve() })));
    // The last queue is made last: sent before start() settles, it did not exist yet.
    await expect(jobs.send('early-last', 60_000)).resolves.toBeUndefined();
    await starting;
    const pool = new Client({ connectionString: db.url });
    await pool.connect();
    try {
      const { rows } = await pool.query(`SELECT name FROM pgboss.job WHERE name = 'early-last'`);
      expect(rows).toEqual([{ name: 'early-last' }]);
    } finally {
      await pool.end();
    }
  });
});
