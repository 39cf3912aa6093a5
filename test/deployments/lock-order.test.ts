import { Client } from 'pg';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';

/**
 * Deleting a deployment locks its egg, then the deployment; finishing its build took the
 * deployment, then the egg. Both at once deadlocked and PostgreSQL aborted one: a DELETE could
 * answer 500. Every writer of both rows now takes the egg's first.
 */
describe('a build ending while its deployment is deleted', () => {
  let t: TestGateway;
  let user: TestUser;
  let slug: string;

  beforeAll(async () => {
    // Builds never end by themselves here: the test ends them.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '600000' });
    user = await makeUser(t.gateway);
    slug = (await makeApp(t.url, user)).slug;
  });
  afterAll(() => t.stop());

  const connect = async () => {
    const c = new Client({ connectionString: t.db.url });
    await c.connect();
    return c;
  };

  it('finishBuild waits for the egg before it takes the deployment, so a deleter holding the egg can take the deployment', async () => {
    const d = await deploy(t.url, user, slug);
    const deleter = await connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query('SELECT 1 FROM apps a JOIN deployments d ON d.app_id = a.id WHERE d.id = $1 FOR UPDATE OF a', [d.id]);
      const finished = t.gateway.services.deployments.finishBuild(d.id, { ok: true });
      // Wait until finishBuild is blocked by the deleter's transaction.
      const pid: number = (await deleter.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      for (let blocked = false; !blocked;) {
        const rows = await t.gateway.ds.query<unknown[]>('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid]);
        blocked = rows.length > 0;
        if (!blocked) await new Promise((r) => setImmediate(r));
      }
      // The deleter takes the deployment's row, as DELETE does. Not NOWAIT: the build's lease renewal
      // may hold it for an instant. Had finishBuild taken it before the egg's, this would deadlock
      // and PostgreSQL would abort one side (the deleter here, or finishBuild below).
      await deleter.query('SELECT 1 FROM deployments WHERE id = $1 FOR UPDATE', [d.id]);
      await deleter.query('DELETE FROM deployments WHERE id = $1', [d.id]);
      await deleter.query('COMMIT');
      // The build's end finds nothing to finish.
      expect(await finished).toBeNull();
    } finally {
      await deleter.end();
    }
  });

  it('DELETE racing the end of the build always answers 204', async () => {
    for (let i = 0; i < 20; i++) {
      const d = await deploy(t.url, user, slug);
      const [del, fin] = await Promise.allSettled([
        rest(t.url, user.token, 'DELETE', `/deployments/${d.id}`),
        t.gateway.services.deployments.finishBuild(d.id, { ok: true }),
      ]);
      expect(del).toMatchObject({ status: 'fulfilled', value: { status: 204 } });
      expect(fin.status).toBe('fulfilled');
    }
  });
});
