import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { AppResourcesDocument, UpdateResourcesDocument } from '../../src/client/generated';
import { gql, gqlOk, GqlResult, startGateway, TestGateway } from '../support/gateway';
import { eggWithPeople, keepsMemory, storedMemory } from './helpers';

/** updateResources with an input object that has no memoryMb at all. */
const UpdateResourcesEmptyInput = parse(`
  mutation UpdateResourcesEmptyInput($app: String!) {
    updateResources(app: $app, input: {}) { slug memoryMb effectiveMemoryMb capMb }
  }
`) as TypedDocumentNode<{ updateResources: { slug: string; memoryMb: number | null } }, { app: string }>;

function errorOf(res: GqlResult<unknown>) {
  expect(res.errors?.length).toBeGreaterThan(0);
  return res.errors![0];
}

describe('GraphQL updateResources', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('the owner sets and clears the override on a free egg', async () => {
    const { owner, slug } = await eggWithPeople(t);
    const set = await gqlOk(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: 384 });
    expect(set.updateResources).toEqual({ slug, memoryMb: 384, effectiveMemoryMb: 384, capMb: 512, replicas: null, effectiveReplicas: 1, replicasCap: 1 });
    expect(await storedMemory(t, slug)).toBe(384);

    const cleared = await gqlOk(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: null });
    expect(cleared.updateResources).toEqual({ slug, memoryMb: null, effectiveMemoryMb: 256, capMb: 512, replicas: null, effectiveReplicas: 1, replicasCap: 1 });
    expect(await storedMemory(t, slug)).toBeNull();
    const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(app).toMatchObject({ memoryMb: null, effectiveMemoryMb: 256, capMb: 512 });
  });

  it('an always_on egg takes up to 1024; 1025 is LIMIT_EXCEEDED naming 1024', async () => {
    const { owner, slug } = await eggWithPeople(t, { tier: 'always_on' });
    const ok = await gqlOk(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: 1024 });
    expect(ok.updateResources).toEqual({ slug, memoryMb: 1024, effectiveMemoryMb: 1024, capMb: 1024, replicas: null, effectiveReplicas: 1, replicasCap: 3 });

    const res = await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: 1025 }));
    const err = errorOf(res);
    expect(err.extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(err.extensions?.errors?.[0]?.field).toBe('memoryMb');
    expect(err.message).toMatch(/\b1024\b/);
    expect(res.data ?? null).toBeNull();
    expect(await storedMemory(t, slug)).toBe(1024);
  });

  it('a free egg: 513 is LIMIT_EXCEEDED naming 512', async () => {
    const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const err = errorOf(await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: 513 })));
    expect(err.extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(err.extensions?.errors?.[0]?.field).toBe('memoryMb');
    expect(err.message).toMatch(/\b512\b/);
  });

  it.each([63, 0, -1])('memoryMb %j is BAD_USER_INPUT on memoryMb, nothing stored', async (memoryMb) => {
    const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const err = errorOf(await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb })));
    expect(err.extensions?.code).toBe('BAD_USER_INPUT');
    expect(err.extensions?.errors?.[0]?.field).toBe('memoryMb');
  });

  it.each([
    ['1.5', 1.5],
    ['"384"', '384'],
  ])('a variable memoryMb of %s is not an Int: BAD_USER_INPUT, nothing stored', async (_name, memoryMb) => {
    const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const res = await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesDocument, { app: slug, memoryMb: memoryMb as number }));
    expect(errorOf(res).extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.data ?? null).toBeNull();
  });

  it('omitting memoryMb entirely is BAD_USER_INPUT on memoryMb (it does not clear the override)', async () => {
    const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const literal = await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesEmptyInput, { app: slug }));
    expect(errorOf(literal).extensions?.code).toBe('BAD_USER_INPUT');
    expect(errorOf(literal).extensions?.errors?.[0]?.field).toBe('memoryMb');

    const unsetVariable = await keepsMemory(t, slug, () => gql(t.url, owner.token, UpdateResourcesDocument, { app: slug }));
    expect(errorOf(unsetVariable).extensions?.code).toBe('BAD_USER_INPUT');
    expect(errorOf(unsetVariable).extensions?.errors?.[0]?.field).toBe('memoryMb');
    expect(await storedMemory(t, slug)).toBe(300);
  });

  it('a collaborator is FORBIDDEN and changes nothing', async () => {
    const { collaborator, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const res = await keepsMemory(t, slug, () => gql(t.url, collaborator.token, UpdateResourcesDocument, { app: slug, memoryMb: 384 }));
    expect(errorOf(res).extensions?.code).toBe('FORBIDDEN');
    const clear = await keepsMemory(t, slug, () => gql(t.url, collaborator.token, UpdateResourcesDocument, { app: slug, memoryMb: null }));
    expect(errorOf(clear).extensions?.code).toBe('FORBIDDEN');
    // The collaborator can still read the egg's resources.
    const { app } = await gqlOk(t.url, collaborator.token, AppResourcesDocument, { slug });
    expect(app).toMatchObject({ memoryMb: 300, effectiveMemoryMb: 300 });
  });

  it('a stranger and an unknown slug are NOT_FOUND', async () => {
    const { stranger, slug } = await eggWithPeople(t, { memoryMb: 300 });
    const res = await keepsMemory(t, slug, () => gql(t.url, stranger.token, UpdateResourcesDocument, { app: slug, memoryMb: 384 }));
    expect(errorOf(res).extensions?.code).toBe('NOT_FOUND');
    const unknown = await gql(t.url, stranger.token, UpdateResourcesDocument, { app: 'no-such-egg-here', memoryMb: 384 });
    expect(errorOf(unknown).extensions?.code).toBe('NOT_FOUND');
  });

  it('without a token it is UNAUTHENTICATED', async () => {
    const { slug } = await eggWithPeople(t, { memoryMb: 300 });
    const res = await keepsMemory(t, slug, () => gql(t.url, null, UpdateResourcesDocument, { app: slug, memoryMb: 384 }));
    expect(errorOf(res).extensions?.code).toBe('UNAUTHENTICATED');
  });
});
