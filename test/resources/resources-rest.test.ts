import { AppResourcesDocument } from '../../src/client/generated';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { expectInvalid, expectProblem, expectUnauthorized } from '../rest/problem';
import { eggWithPeople, keepsMemory, storedMemory } from './helpers';

const patch = (t: TestGateway, token: string | null, slug: string, body: unknown, headers: Record<string, string> = {}) =>
  rest(t.url, token, 'PATCH', `/apps/${slug}/resources`, body, headers);

describe('PATCH /apps/:slug/resources', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  describe('free egg', () => {
    it('sets an override: 200 {slug, memory_mb, effective_memory_mb, cap_mb} and stores it', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await patch(t, owner.token, slug, { memory_mb: 384 });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ slug, memory_mb: 384, effective_memory_mb: 384, cap_mb: 512 });
      expect(await storedMemory(t, slug)).toBe(384);
      const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
      expect(app).toMatchObject({ slug, tier: 'FREE', memoryMb: 384, effectiveMemoryMb: 384, capMb: 512, currentDeployment: null });
    });

    it('accepts the bounds 64 and 512', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expect((await patch(t, owner.token, slug, { memory_mb: 64 })).body).toEqual({ slug, memory_mb: 64, effective_memory_mb: 64, cap_mb: 512 });
      expect((await patch(t, owner.token, slug, { memory_mb: 512 })).body).toEqual({ slug, memory_mb: 512, effective_memory_mb: 512, cap_mb: 512 });
      expect(await storedMemory(t, slug)).toBe(512);
    });

    it('null clears the override: the free default of 256 applies', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 384 });
      const res = await patch(t, owner.token, slug, { memory_mb: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ slug, memory_mb: null, effective_memory_mb: 256, cap_mb: 512 });
      expect(await storedMemory(t, slug)).toBeNull();
      const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
      expect(app).toMatchObject({ memoryMb: null, effectiveMemoryMb: 256, capMb: 512 });
    });

    it('513 is over the free cap: 422 limit_exceeded on memory_mb naming 512, nothing stored', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 513 }));
      expectProblem(res, 422, 'limit_exceeded');
      expect(res.body.errors[0].field).toBe('memory_mb');
      expect(res.body.detail).toMatch(/\b512\b/);
      expect(res.body.errors[0].message).toMatch(/\b512\b/);
      expect(await storedMemory(t, slug)).toBe(300);
    });
  });

  describe('always_on egg', () => {
    it('has cap 1024 and a default of 512', async () => {
      const { owner, slug } = await eggWithPeople(t, { tier: 'always_on' });
      const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
      expect(app).toMatchObject({ tier: 'ALWAYS_ON', memoryMb: null, effectiveMemoryMb: 512, capMb: 1024 });
      const res = await patch(t, owner.token, slug, { memory_mb: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ slug, memory_mb: null, effective_memory_mb: 512, cap_mb: 1024 });
    });

    it('accepts 1024', async () => {
      const { owner, slug } = await eggWithPeople(t, { tier: 'always_on' });
      const res = await patch(t, owner.token, slug, { memory_mb: 1024 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ slug, memory_mb: 1024, effective_memory_mb: 1024, cap_mb: 1024 });
      expect(await storedMemory(t, slug)).toBe(1024);
    });

    it('1025 → 422 limit_exceeded on memory_mb naming 1024, nothing stored', async () => {
      const { owner, slug } = await eggWithPeople(t, { tier: 'always_on', memoryMb: 700 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 1025 }));
      expectProblem(res, 422, 'limit_exceeded');
      expect(res.body.errors[0].field).toBe('memory_mb');
      expect(res.body.detail).toMatch(/\b1024\b/);
      expect(res.body.errors[0].message).toMatch(/\b1024\b/);
      expect(await storedMemory(t, slug)).toBe(700);
    });
  });

  describe('validation: 422 validation_failed on memory_mb, nothing stored', () => {
    it.each([
      ['63', 63],
      ['0', 0],
      ['-1', -1],
      ['1.5', 1.5],
      ['the string "384"', '384'],
      ['true', true],
      ['an object', { mb: 384 }],
      ['a list', [384]],
    ])('memory_mb %s', async (_name, value) => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: value }));
      expectInvalid(res, 'memory_mb');
      expect(res.body.errors[0].field).toBe('memory_mb');
      expect(await storedMemory(t, slug)).toBe(300);
    });

    it('a number beyond any integer column (2^31) is a 422 on memory_mb, not a 500', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 2 ** 31 }));
      expect(res.status).toBe(422);
      expect(['validation_failed', 'limit_exceeded']).toContain(res.body.code);
      expect(res.body.errors[0].field).toBe('memory_mb');
    });

    it('a missing memory_mb ({}) is a 422 naming memory_mb', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, {}));
      expectInvalid(res, 'memory_mb');
      expect(res.body.errors[0].field).toBe('memory_mb');
    });

    it('an unknown field is a 422 naming it, even next to a valid memory_mb', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 384, cpu_shares: 2 }));
      expectInvalid(res, 'cpu_shares');
      expect(res.body.errors.map((e: { field: string }) => e.field)).not.toContain('memory_mb');
    });

    it('a camelCase memoryMb is an unknown field, not an alias', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memoryMb: 384 }));
      expectInvalid(res, 'memoryMb');
    });

    it('a body that is not a JSON object is a 400 bad_request', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      expectProblem(await keepsMemory(t, slug, () => patch(t, owner.token, slug, [384])), 400, 'bad_request');
      expectProblem(await keepsMemory(t, slug, () => patch(t, owner.token, slug, '{"memory_mb": ')), 400, 'bad_request');
    });
  });

  describe('who may', () => {
    it('a collaborator gets 403 forbidden and changes nothing', async () => {
      const { collaborator, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, collaborator.token, slug, { memory_mb: 384 }));
      expectProblem(res, 403, 'forbidden');
      const cleared = await keepsMemory(t, slug, () => patch(t, collaborator.token, slug, { memory_mb: null }));
      expectProblem(cleared, 403, 'forbidden');
    });

    it('a stranger gets 404 not_found, the same as for an unknown slug', async () => {
      const { stranger, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, stranger.token, slug, { memory_mb: 384 }));
      expectProblem(res, 404, 'not_found');
      const unknown = await patch(t, stranger.token, 'no-such-egg-here', { memory_mb: 384 });
      expectProblem(unknown, 404, 'not_found');
    });

    it('an unknown slug is a 404 for a signed-in user', async () => {
      const { owner } = await eggWithPeople(t);
      expectProblem(await patch(t, owner.token, 'no-such-egg-here', { memory_mb: 384 }), 404, 'not_found');
    });

    it('without a token: 401 unauthorized with WWW-Authenticate, nothing changed', async () => {
      const { slug } = await eggWithPeople(t, { memoryMb: 300 });
      expectUnauthorized(await keepsMemory(t, slug, () => patch(t, null, slug, { memory_mb: 384 })));
      expectUnauthorized(await keepsMemory(t, slug, () => patch(t, 'hatch_not-a-real-token', slug, { memory_mb: 384 })));
    });
  });

  describe('API releases', () => {
    it('pinned to 2026-01-15 the endpoint does not exist: 404 not_found, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 384 }, { 'API-Version': '2026-01-15' }));
      expectProblem(res, 404, 'not_found');
      expect(res.headers.get('api-version')).toBe('2026-01-15');
    });

    it('with 2026-09-01 it answers 200 and echoes the release', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await patch(t, owner.token, slug, { memory_mb: 384 }, { 'API-Version': '2026-09-01' });
      expect(res.status).toBe(200);
      expect(res.headers.get('api-version')).toBe('2026-09-01');
      expect(res.body).toEqual({ slug, memory_mb: 384, effective_memory_mb: 384, cap_mb: 512 });
    });

    it('without the header the latest release (2026-09-01) is used and echoed', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await patch(t, owner.token, slug, { memory_mb: 128 });
      expect(res.status).toBe(200);
      expect(res.headers.get('api-version')).toBe('2026-09-01');
      expect(await storedMemory(t, slug)).toBe(128);
    });

    it('an unknown release is a 400 bad_request, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { memoryMb: 300 });
      const res = await keepsMemory(t, slug, () => patch(t, owner.token, slug, { memory_mb: 384 }, { 'API-Version': '2027-01-01' }));
      expectProblem(res, 400, 'bad_request');
    });
  });

  it('the effective memory never exceeds the cap: an always_on override of 1024 on an egg moved to free gives 512', async () => {
    const { owner, slug } = await eggWithPeople(t, { tier: 'always_on', memoryMb: 1024 });
    await t.gateway.services.apps.setTier(slug, 'free');
    const { app } = await gqlOk(t.url, owner.token, AppResourcesDocument, { slug });
    expect(app).toMatchObject({ tier: 'FREE', capMb: 512, effectiveMemoryMb: 512 });
  });
});
