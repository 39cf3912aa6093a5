import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { Client } from 'pg';
import { buildApp, Gateway } from '../../src/app';
import { DeploymentLogStreamDocument } from '../../src/client/generated';
import { collect, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { untilListening } from './helpers';

const CurrentDeploymentDocument = parse(`query CurrentDeployment($slug: String!) { app(slug: $slug) { currentDeployment { id } } }`) as TypedDocumentNode<
  { app: { currentDeployment: { id: string } | null } },
  { slug: string }
>;

interface StoredLine {
  seq: number;
  type: string;
  message: string;
}

const RESUMED = /Build resumed/;

/**
 * A clean stop (gateway.stop(), what SIGINT/SIGTERM do) in the middle of a build leaves the
 * deployment `building`; the next gateway started on the same database resumes the build and
 * finishes it. None stays `building`, and the log continues its sequence.
 */
describe('a clean restart in the middle of a build', () => {
  let t: TestGateway;
  let second: Gateway | null = null;
  let owner: TestUser;

  beforeAll(async () => {
    // Builds of 5 s: a line a second, so a restart lands in the middle of one.
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '5000' });
    owner = await makeUser(t.gateway);
  });
  afterAll(async () => {
    await second?.stop();
    await t.stop();
  });

  /** Reads the database directly: between the two gateways none is there to ask. */
  async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    const c = new Client({ connectionString: t.db.url });
    await c.connect();
    try {
      return (await c.query(sql, params)).rows as T[];
    } finally {
      await c.end();
    }
  }
  const storedLines = (id: string) => query<StoredLine>('SELECT seq, type, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [id]);

  it('the next gateway on the same database resumes the builds: one goes live, the failing one fails with its reason, none stays building', async () => {
    const ok = await makeApp(t.url, owner);
    const failing = await makeApp(t.url, owner);
    const d = await deploy(t.url, owner, ok.slug, { GREETING: 'hello' });
    const f = await deploy(t.url, owner, failing.slug, { HATCHERY_SIMULATE: 'fail' });

    // Wait, over graphql-ws, until both builds have written a few lines.
    const watcher = wsClient(t.url, owner.token);
    try {
      for (const id of [d.id, f.id]) {
        const stream = collect(watcher, DeploymentLogStreamDocument, { id, type: 'BUILD' });
        const lines = (await stream.waitFor(2)).map((i) => i.deploymentLogs);
        expect(lines.map((l) => l.message)).toEqual([expect.stringMatching(/^==> Build started/), '==> Installing dependencies']);
        stream.unsubscribe();
      }
    } finally {
      await watcher.dispose();
    }

    await t.gateway.stop();

    // Stopped mid-build: still building, with the lines written so far stored.
    const statuses = await query<{ id: string; status: string }>('SELECT id, status FROM deployments WHERE id = ANY($1) ORDER BY id', [[d.id, f.id]]);
    expect(statuses.map((s) => s.status)).toEqual(['building', 'building']);
    const before = { [d.id]: await storedLines(d.id), [f.id]: await storedLines(f.id) };
    for (const lines of Object.values(before)) {
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(lines.some((l) => /Build succeeded|^error:/.test(l.message))).toBe(false);
    }

    // The same database and settings; quicker builds, so the resumed ones finish soon.
    second = buildApp({ ...t.config, simBuildMs: 300 });
    const url = await second.start(0);

    expect(await settle(url, owner, d.id)).toBe('LIVE');
    expect(await settle(url, owner, f.id)).toBe('FAILED');

    const live = await rest(url, owner.token, 'GET', `/deployments/${d.id}`);
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ id: d.id, status: 'live', failure_reason: null, env_keys: ['GREETING'] });
    expect(live.body.finished_at).not.toBeNull();
    const failed = await rest(url, owner.token, 'GET', `/deployments/${f.id}`);
    expect(failed.body).toMatchObject({ id: f.id, status: 'failed', failure_reason: 'build failed: HATCHERY_SIMULATE=fail' });
    expect(failed.body.finished_at).not.toBeNull();

    // The live one is its egg's current deployment and runs on the new gateway.
    expect((await gqlOk(url, owner.token, CurrentDeploymentDocument, { slug: ok.slug })).app.currentDeployment?.id).toBe(d.id);
    await untilListening(url, owner, d.id);

    for (const [id, last] of [
      [d.id, '==> Build succeeded'],
      [f.id, 'error: build failed: HATCHERY_SIMULATE=fail'],
    ]) {
      const lines = await storedLines(id);
      // Continuous: 1, 2, 3, … with nothing lost or written twice across the restart.
      expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: lines.length }, (_, i) => i + 1));
      // What was written before the stop is kept as it was, and the resumed build follows it.
      expect(lines.slice(0, before[id].length)).toEqual(before[id]);
      expect(lines.filter((l) => RESUMED.test(l.message))).toHaveLength(1);
      expect(lines[before[id].length]).toMatchObject({ type: 'build', message: expect.stringMatching(RESUMED) });
      const build = lines.filter((l) => l.type === 'build').map((l) => l.message);
      expect(build.at(-1)).toBe(last);
      expect(build.filter((m) => m === last)).toHaveLength(1);
    }

    expect(await query('SELECT id FROM deployments WHERE status = $1', ['building'])).toEqual([]);
  });
});
