import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ManualClock } from '../../src/clock';
import { Jobs } from '../../src/jobs/jobs';
import { createLogger } from '../../src/log';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { EggWithPeople, makeApp, makeEggWithPeople } from '../support/factories';
import { until } from '../faults/helpers';
import { helloEgg, upload } from './helpers';

const HOUR_MS = 3600 * 1000;
/** HATCHERY_SOURCE_RETENTION_MS's default. */
const RETENTION_MS = 24 * HOUR_MS;

/**
 * The `sources-prune` job removes sources no deployment references, older than the retention,
 * never an egg's newest. It runs on pg-boss (HATCHERY_JOBS=on): the tests queue runs from a
 * separate sender and wait for the gateway's worker to complete them.
 */
describe('pruning sources', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;
  let egg: EggWithPeople;
  let sender: Jobs;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' }, { clock });
    egg = await makeEggWithPeople(t);
    sender = new Jobs(t.db.url, createLogger('silent'));
    await sender.start([]);
  });
  afterAll(async () => {
    await sender?.stop(1000);
    await t?.stop();
  });

  const completed = async () =>
    (
      await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'sources-prune' AND state = 'completed' AND singleton_key IS NOT NULL`)
    )[0].n as number;

  /** Queues a run of sources-prune and waits until the gateway's worker has completed it. */
  async function runPrune(): Promise<void> {
    const before = await completed();
    await sender.send('sources-prune');
    await until('a completed run of sources-prune', async () => (await completed()) > before, 400, 50);
  }

  const source = async (slug: string, label = randomBytes(4).toString('hex')) => (await upload(t, egg.owner.token, slug, helloEgg(label))).body.id as string;
  const present = async (ids: string[]) =>
    (await t.gateway.ds.query<Array<{ id: string }>>('SELECT id FROM sources WHERE id = ANY($1) ORDER BY id', [ids])).map((r) => r.id);
  const chunksOf = async (id: string) => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM source_chunks WHERE source_id = $1', [id]))[0].n as number;

  it('removes old unreferenced sources (and their chunks); keeps referenced ones, young ones and each egg’s newest', async () => {
    const slug = (await makeApp(t.url, egg.owner)).slug;
    const old = await source(slug);
    const deployed = await source(slug);
    const dep = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: slug, source: deployed });
    expect(dep.status).toBe(201);
    const newest = await source(slug);
    const lonely = await source((await makeApp(t.url, egg.owner)).slug); // the only (so newest) source of its egg
    expect(await chunksOf(old)).toBe(1);

    clock.advance(RETENTION_MS - 1000);
    const young = await source(slug); // now the egg's newest; `newest` is not any more
    await runPrune();
    expect(await present([old, deployed, newest, lonely, young])).toEqual([old, deployed, newest, lonely, young].sort());

    clock.advance(2000); // past the retention for the first four, not for `young`
    await runPrune();
    expect(await present([old, deployed, newest, lonely, young])).toEqual([deployed, lonely, young].sort());
    expect(await chunksOf(old)).toBe(0);
    expect(await chunksOf(newest)).toBe(0);
    expect(await chunksOf(deployed)).toBe(1);

    // Once its deployment is deleted, the deployed source goes at the next run.
    expect((await rest(t.url, egg.owner.token, 'DELETE', `/deployments/${dep.body.id}`)).status).toBe(204);
    await runPrune();
    expect(await present([deployed, lonely, young])).toEqual([lonely, young].sort());
  });

  it('skips a source a deploy holds, without failing; the deployment then keeps it', async () => {
    const slug = (await makeApp(t.url, egg.owner)).slug;
    const held = await source(slug);
    await source(slug);
    clock.advance(RETENTION_MS + 1000);
    const app = await t.gateway.services.apps.getVisible({ user: { id: egg.owner.id } } as never, slug);

    // A deploy in flight: its transaction has claimed the source and not committed yet.
    const deployer = new Client({ connectionString: t.db.url });
    await deployer.connect();
    try {
      await deployer.query('BEGIN');
      const claimed = await deployer.query('SELECT id FROM sources WHERE id = $1 AND app_id = $2 FOR KEY SHARE', [held, app.id]);
      expect(claimed.rowCount).toBe(1);
      expect(await t.gateway.services.sources.prune()).toBe(0);
      expect(await present([held])).toEqual([held]);
      await deployer.query('ROLLBACK');
    } finally {
      await deployer.end();
    }
    const dep = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: slug, source: held });
    expect(dep.status).toBe(201);
    await runPrune();
    expect(await present([held])).toEqual([held]);
    const failed = (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'sources-prune' AND state = 'failed'`))[0].n;
    expect(failed).toBe(0);
  });

  it('a deploy naming a source the prune job removed is a 422 on `source`, not an error', async () => {
    const slug = (await makeApp(t.url, egg.owner)).slug;
    const gone = await source(slug);
    await source(slug);
    clock.advance(RETENTION_MS + 1000);
    await runPrune();
    expect(await present([gone])).toEqual([]);
    const res = await rest(t.url, egg.owner.token, 'POST', '/deploy', { project: slug, source: gone });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: 'source', message: expect.stringMatching(/is not a source of this egg/) }]);
  });
});
