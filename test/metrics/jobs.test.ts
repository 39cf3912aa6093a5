import { Writable } from 'node:stream';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { Metrics } from '../../src/metrics';
import { startGateway, TestGateway } from '../support/gateway';
import { Scrape, scrape, scrapeUntil } from './prom';

const QUEUES = [
  'deployments-reclaim',
  'volumes-erase',
  'volumes-measure',
  'previews-expire',
  'previews-reclaim',
  'energy-meter',
  'sources-prune',
  'logs-retention',
  'webhooks-deliver',
];
const DEPTH = 'hatchery_job_queue_depth';
const FAILURES = 'hatchery_job_failures_total';

describe('job metrics (HATCHERY_JOBS=on)', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' });
  });
  afterAll(() => t.stop());

  it('reads every queue’s depth per state at scrape time, and has a failure series per queue from the start', async () => {
    const s = await scrape(t.url);
    for (const queue of QUEUES) {
      for (const state of ['created', 'retry', 'active']) expect(s.find(DEPTH, { queue, state })).toHaveLength(1);
      expect(s.find(FAILURES, { queue })).toEqual([{ name: FAILURES, labels: { queue }, value: 0 }]);
    }
    expect(new Set(s.find(DEPTH).map((x) => x.labels.queue))).toEqual(new Set(QUEUES));
  });

  it('counts a job that waits: a delivery run asked for in ten minutes is a created job of webhooks-deliver', async () => {
    const waiting = (s: Scrape) => s.value(DEPTH, { queue: 'webhooks-deliver', state: 'created' });
    const before = waiting(await scrape(t.url));
    t.gateway.services.webhooks.wake(600_000);
    // wake() queues in the background: the depth is what shows it.
    const after = await scrapeUntil(t.url, (s) => waiting(s) === before + 1, 'the queued delivery run');
    const [{ n }] = await t.gateway.ds.query(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhooks-deliver' AND state = 'created' AND start_after > now() + interval '5 minutes'`,
    );
    expect(n).toBe(1);
    expect(waiting(after)).toBe(before + n);
  });
});

describe('Jobs', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('counts each run whose handler throws, per queue, and still lets pg-boss fail it', async () => {
    const lines: Array<Record<string, unknown>> = [];
    let failed: () => void = () => undefined;
    const firstFailure = new Promise<void>((resolve) => (failed = resolve));
    const logger = createLogger(
      'warn',
      new Writable({
        write(chunk, _e, done) {
          const line = JSON.parse(String(chunk));
          lines.push(line);
          if (line.msg === 'job failed') failed();
          done();
        },
      }),
    );
    const metrics = new Metrics({ defaultMetrics: false });
    const jobs = new Jobs(t.db.url, logger, metrics);
    let ran = 0;
    try {
      await jobs.start([
        { name: 'metrics-fails', pollSeconds: 0.5, handler: () => Promise.reject(new Error('broken on purpose')) },
        { name: 'metrics-works', pollSeconds: 0.5, handler: () => Promise.resolve(void ran++) },
      ]);
      const idle = new Scrape(await metrics.scrape());
      expect(idle.value(FAILURES, { queue: 'metrics-fails' })).toBe(0);
      expect(idle.value(DEPTH, { queue: 'metrics-fails', state: 'created' })).toBe(0);

      await jobs.send('metrics-fails', 600_000);
      const queued = new Scrape(await metrics.scrape());
      expect(queued.value(DEPTH, { queue: 'metrics-fails', state: 'created' })).toBe(1);
      expect(queued.value(DEPTH, { queue: 'metrics-works', state: 'created' })).toBe(0);

      await jobs.send('metrics-fails');
      await firstFailure;
      const after = new Scrape(await metrics.scrape());
      const failures = lines.filter((l) => l.msg === 'job failed');
      expect(failures[0]).toMatchObject({ queue: 'metrics-fails', err: { message: 'broken on purpose' } });
      // The counter moves with the log line of each failed run (pg-boss may have retried already).
      expect(after.value(FAILURES, { queue: 'metrics-fails' })).toBe(failures.length);
      expect(after.value(FAILURES, { queue: 'metrics-works' })).toBe(0);
      expect(ran).toBe(0);
      // The error still reaches pg-boss, which records the run as failed (to retry, or for good).
      for (let i = 0; ; i++) {
        const rows = await t.gateway.ds.query(`SELECT state::text AS state FROM pgboss.job WHERE name = 'metrics-fails' AND state IN ('retry', 'failed')`);
        if (rows.length > 0) break;
        if (i === 200) throw new Error('pg-boss never recorded the failed run');
        await new Promise((r) => setTimeout(r, 25));
      }
    } finally {
      await jobs.stop(1000);
    }
    // A stopped job system is not read any more.
    expect(new Scrape(await metrics.scrape()).find(DEPTH)).toEqual([]);
  });
});
