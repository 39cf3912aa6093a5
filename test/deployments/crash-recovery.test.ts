import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { buildApp, Gateway } from '../../src/app';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';

const CurrentDeploymentDocument = parse(`query CurrentDeployment($slug: String!) { app(slug: $slug) { currentDeployment { id } } }`) as TypedDocumentNode<
  { app: { currentDeployment: { id: string } | null } },
  { slug: string }
>;

/**
 * A gateway that crashes mid-build leaves its deployment in `building` with a lease that lapses.
 * The next gateway on the same database claims such builds and finishes them.
 */
describe('crash recovery of builds', () => {
  let t: TestGateway;
  let second: Gateway | null = null;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
  });
  afterAll(async () => {
    await second?.stop();
    await t.stop();
  });

  it('a new gateway resumes a build whose lease lapsed, and the deployment goes live', async () => {
    const { slug } = await makeApp(t.url, owner);
    const orphan = await deploy(t.url, owner, slug, { SOME_SECRET: 's3cret' });
    expect(await settle(t.url, owner, orphan.id)).toBe('LIVE');
    const leased = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, leased.id)).toBe('LIVE');

    // As if the first gateway crashed while building both: one lease has lapsed, the other is
    // still held (its builder may be alive) and must be left alone.
    await t.gateway.ds.query(`UPDATE deployments SET status = 'building', lease_until = now() - interval '1 hour', finished_at = NULL WHERE id = $1`, [
      orphan.id,
    ]);
    await t.gateway.ds.query(`UPDATE deployments SET status = 'building', lease_until = now() + interval '1 hour', finished_at = NULL WHERE id = $1`, [
      leased.id,
    ]);
    await t.gateway.ds.query('UPDATE apps SET current_deployment_id = NULL WHERE slug = $1', [slug]);
    const linesBefore: number = (await t.gateway.ds.query('SELECT max(seq)::int AS n FROM log_lines WHERE deployment_id = $1', [orphan.id]))[0].n;
    await t.gateway.stop();

    second = buildApp(t.config);
    const url = await second.start(0);

    expect(await settle(url, owner, orphan.id)).toBe('LIVE');
    const got = await rest(url, owner.token, 'GET', `/deployments/${orphan.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: orphan.id, status: 'live', failure_reason: null, env_keys: ['SOME_SECRET'] });
    expect(got.body.finished_at).not.toBeNull();
    // Gone live, it is the egg's current deployment again.
    expect((await gqlOk(url, owner.token, CurrentDeploymentDocument, { slug })).app.currentDeployment?.id).toBe(orphan.id);

    const logs = await rest(url, owner.token, 'GET', `/deployments/${orphan.id}/logs?type=build&limit=1000`);
    expect(logs.status).toBe(200);
    const messages: string[] = logs.body.data.map((l: { message: string }) => l.message);
    const resumedAt = messages.findIndex((m) => /resumed/i.test(m));
    expect(resumedAt).toBeGreaterThanOrEqual(0);
    expect(messages.slice(resumedAt)).toContain('==> Build succeeded');

    // The resumed build's lines continue the log's sequence.
    const seqs: number[] = (await second.ds.query('SELECT seq FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [orphan.id])).map(
      (r: { seq: number }) => r.seq,
    );
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(seqs.length).toBeGreaterThan(linesBefore);

    // The build whose lease is still held was not taken over.
    const held = await rest(url, owner.token, 'GET', `/deployments/${leased.id}`);
    expect(held.body.status).toBe('building');
    const heldLogs = await rest(url, owner.token, 'GET', `/deployments/${leased.id}/logs?limit=1000`);
    expect(heldLogs.body.data.map((l: { message: string }) => l.message).filter((m: string) => /resumed/i.test(m))).toEqual([]);
  });
});
