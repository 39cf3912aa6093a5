import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { ManualClock } from '../../src/clock';
import { RestartAppDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeEggWithPeople, settle } from '../support/factories';
import { expectInvalid, expectProblem } from '../rest/problem';
import { ledgerRows } from '../energy/helpers';

const MINUTE = 60_000;

type Loose = TypedDocumentNode<Record<string, Record<string, unknown>>, Record<string, unknown>>;

const APP: Loose = parse(/* GraphQL */ `
  query AppReplicas($slug: String!) {
    app(slug: $slug) {
      memoryMb
      replicas
      effectiveReplicas
      replicasCap
      currentDeployment {
        id
        replicas
      }
    }
  }
`);

const UPDATE: Loose = parse(/* GraphQL */ `
  mutation SetReplicas($app: String!, $replicas: Int) {
    updateResources(app: $app, input: { replicas: $replicas }) {
      replicas
      effectiveReplicas
      replicasCap
      memoryMb
    }
  }
`);

/** PATCH /apps/:slug/resources `replicas`: free 1, always-on up to 3 (configurable), owner only, from the next deploy or restart. */
describe('replicas', () => {
  let t: TestGateway;
  const clock = new ManualClock('2026-11-24T10:00:00.000Z');

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  const patch = (token: string, slug: string, body: unknown) => rest(t.url, token, 'PATCH', `/apps/${slug}/resources`, body);
  const stored = async (slug: string) =>
    (await t.gateway.ds.query<Array<{ replicas: number | null; memory_mb: number | null }>>('SELECT replicas, memory_mb FROM apps WHERE slug = $1', [slug]))[0];
  const app = async (token: string, slug: string) => (await gqlOk(t.url, token, APP, { slug })).app;

  it('a free egg runs one: 1 is accepted, 2 is a 422 limit_exceeded on replicas naming the cap, nothing stored', async () => {
    const { owner, slug } = await makeEggWithPeople(t);
    const ok = await patch(owner.token, slug, { replicas: 1 });
    // The REST answer keeps the contract's fields exactly.
    expect(ok).toMatchObject({ status: 200, body: { slug, memory_mb: null, effective_memory_mb: 256, cap_mb: 512 } });
    expect(Object.keys(ok.body as object).sort()).toEqual(['cap_mb', 'effective_memory_mb', 'memory_mb', 'slug']);
    expect(await stored(slug)).toEqual({ replicas: 1, memory_mb: null });
    const over = await patch(owner.token, slug, { replicas: 2 });
    expectProblem(over, 422, 'limit_exceeded');
    expect(over.body.errors).toEqual([{ field: 'replicas', message: 'exceeds the free tier’s cap of 1 replica' }]);
    expect(await stored(slug)).toEqual({ replicas: 1, memory_mb: null });
    expect(await app(owner.token, slug)).toMatchObject({ replicas: 1, effectiveReplicas: 1, replicasCap: 1 });
  });

  it('always-on: up to 3; 4 is a 422; 0, -1, 1.5 and "2" are 422s on replicas; nothing stored by any', async () => {
    const { owner, slug } = await makeEggWithPeople(t, 'always_on');
    expect((await patch(owner.token, slug, { replicas: 3 })).status).toBe(200);
    const over = await patch(owner.token, slug, { replicas: 4 });
    expectProblem(over, 422, 'limit_exceeded');
    expect(over.body.errors).toEqual([{ field: 'replicas', message: 'exceeds the always_on tier’s cap of 3 replicas' }]);
    for (const bad of [0, -1, 1.5, '2']) expectInvalid(await patch(owner.token, slug, { replicas: bad }), 'replicas');
    expect(await stored(slug)).toEqual({ replicas: 3, memory_mb: null });
    expect(await app(owner.token, slug)).toMatchObject({ replicas: 3, effectiveReplicas: 3, replicasCap: 3 });
  });

  it('owner only: a collaborator gets 403 and a stranger 404, nothing changed', async () => {
    const { collaborator, stranger, slug } = await makeEggWithPeople(t, 'always_on');
    expectProblem(await patch(collaborator.token, slug, { replicas: 2 }), 403, 'forbidden');
    expectProblem(await patch(stranger.token, slug, { replicas: 2 }), 404, 'not_found');
    expect(await stored(slug)).toEqual({ replicas: null, memory_mb: null });
  });

  it('memory and replicas are set apart: each field absent leaves the other as it is; null clears; {} names what to give', async () => {
    const { owner, slug } = await makeEggWithPeople(t, 'always_on');
    expect((await patch(owner.token, slug, { memory_mb: 300 })).status).toBe(200);
    expect((await patch(owner.token, slug, { replicas: 2 })).status).toBe(200);
    expect(await stored(slug)).toEqual({ replicas: 2, memory_mb: 300 });
    expect((await patch(owner.token, slug, { memory_mb: 400, replicas: 3 })).status).toBe(200);
    expect(await stored(slug)).toEqual({ replicas: 3, memory_mb: 400 });
    const cleared = (await gqlOk(t.url, owner.token, UPDATE, { app: slug, replicas: null })).updateResources;
    expect(cleared).toEqual({ replicas: null, effectiveReplicas: 1, replicasCap: 3, memoryMb: 400 });
    expectInvalid(await patch(owner.token, slug, {}), 'memory_mb');
  });

  it('apply from the next deploy or restart, never to the running deployment; each replica is metered', async () => {
    const { owner, slug } = await makeEggWithPeople(t, 'always_on');
    const first = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, first.id)).toBe('LIVE');
    expect((await patch(owner.token, slug, { replicas: 3 })).status).toBe(200);
    expect(await app(owner.token, slug)).toMatchObject({ effectiveReplicas: 3, currentDeployment: { id: first.id, replicas: 1 } });

    // One replica for 2 minutes: 2 minutes of energy.
    clock.advance(2 * MINUTE);
    await t.gateway.services.energy.meter();
    const charged = async (ref: string) =>
      (await ledgerRows(t.gateway.ds, owner.id)).filter((r) => r.reason === 'deployment' && r.ref === ref).reduce((sum, r) => sum - r.delta, 0);
    expect(await charged(first.id)).toBe(2);

    await gqlOk(t.url, owner.token, RestartAppDocument, { slug });
    expect(await app(owner.token, slug)).toMatchObject({ currentDeployment: { id: first.id, replicas: 3 } });
    // Three replicas for 2 minutes: 6 more.
    clock.advance(2 * MINUTE);
    await t.gateway.services.energy.meter();
    expect(await charged(first.id)).toBe(8);

    const second = await deploy(t.url, owner, slug);
    expect(await settle(t.url, owner, second.id)).toBe('LIVE');
    expect(await app(owner.token, slug)).toMatchObject({ currentDeployment: { id: second.id, replicas: 3 } });
  });

  it('the caps are the operator’s: HATCHERY_MAX_REPLICAS_ALWAYS_ON=5 lets 5 through, not 6', async () => {
    const other = await startGateway({ HATCHERY_MAX_REPLICAS_ALWAYS_ON: '5' });
    try {
      const { owner, slug } = await makeEggWithPeople(other, 'always_on');
      expect((await rest(other.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { replicas: 5 })).status).toBe(200);
      expectProblem(await rest(other.url, owner.token, 'PATCH', `/apps/${slug}/resources`, { replicas: 6 }), 422, 'limit_exceeded');
    } finally {
      await other.stop();
    }
  });
});
