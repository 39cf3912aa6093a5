import { ProvisionVolumeDocument, VolumeDocument } from '../../src/client/generated';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { ISO_MS, makeApp, makeUser, unique } from '../support/factories';
import { expectInvalid, expectProblem, expectUnauthorized } from '../rest/problem';
import { deleteVolume, eggWithPeople, getVolume, keepsVolume, postVolume, storedVolume, volumeRows } from './helpers';

describe('POST / GET /v1/apps/:slug/volume', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  describe('provision, resize, read', () => {
    it('POST {size_mb: 100} → 201 with the full volume; POST {size_mb: 200} → 200 resized, created_at unchanged; GET → 200 the same', async () => {
      const { owner, slug } = await eggWithPeople(t);

      const created = await postVolume(t, owner.token, slug, { size_mb: 100 });
      expect(created.status).toBe(201);
      expect(created.headers.get('content-type')).toMatch(/^application\/json/);
      expect(created.body).toEqual({
        size_mb: 100,
        used_mb: 0,
        status: 'active',
        mount: '/data',
        over_quota: false,
        created_at: expect.stringMatching(ISO_MS),
        erase_at: null,
      });
      expect(await storedVolume(t, slug)).toEqual({ size_mb: 100, status: 'active', erase_at: null, created_at: created.body.created_at });

      const resized = await postVolume(t, owner.token, slug, { size_mb: 200 });
      expect(resized.status).toBe(200);
      expect(resized.body).toEqual({ ...created.body, size_mb: 200 });
      expect(await volumeRows(t, slug)).toBe(1);
      expect((await storedVolume(t, slug))?.size_mb).toBe(200);

      const read = await getVolume(t, owner.token, slug);
      expect(read.status).toBe(200);
      expect(read.headers.get('content-type')).toMatch(/^application\/json/);
      expect(read.body).toEqual(resized.body);
    });

    it('GraphQL twin: provisionVolume says created true, then false on resize; volume(app) reads it', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const first = (await gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 100 })).provisionVolume;
      expect(first).toEqual({
        created: true,
        volume: { sizeMb: 100, usedMb: 0, status: 'ACTIVE', mount: '/data', overQuota: false, createdAt: expect.stringMatching(ISO_MS), eraseAt: null },
      });
      const second = (await gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 200 })).provisionVolume;
      expect(second).toEqual({ created: false, volume: { ...first.volume, sizeMb: 200 } });
      expect((await gqlOk(t.url, owner.token, VolumeDocument, { app: slug })).volume).toEqual(second.volume);

      // REST sees the same volume.
      const rest = await getVolume(t, owner.token, slug);
      expect(rest.body).toEqual({
        size_mb: 200,
        used_mb: 0,
        status: 'active',
        mount: '/data',
        over_quota: false,
        created_at: first.volume.createdAt,
        erase_at: null,
      });
    });

    it('GET on an egg without a volume → 404 not_found (GraphQL NOT_FOUND)', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expectProblem(await getVolume(t, owner.token, slug), 404, 'not_found');
      const res = await gql(t.url, owner.token, VolumeDocument, { app: slug });
      expect(res.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(res.data?.volume ?? null).toBeNull();
    });
  });

  describe('tier caps', () => {
    it('free: 1024 is allowed, 1025 → 422 limit_exceeded on size_mb naming 1024, the volume keeps 1024', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const ok = await postVolume(t, owner.token, slug, { size_mb: 1024 });
      expect(ok.status).toBe(201);
      expect(ok.body.size_mb).toBe(1024);

      const res = await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, { size_mb: 1025 }));
      expectProblem(res, 422, 'limit_exceeded');
      expect(res.body.errors[0].field).toBe('size_mb');
      expect(res.body.errors[0].message).toMatch(/\b1024\b/);
      expect(res.body.detail).toMatch(/\b1024\b/);
      expect((await getVolume(t, owner.token, slug)).body.size_mb).toBe(1024);
    });

    it('free: 1025 on an egg without a volume → 422 limit_exceeded and no volume is created', async () => {
      const { owner, slug } = await eggWithPeople(t);
      const res = await postVolume(t, owner.token, slug, { size_mb: 1025 });
      expectProblem(res, 422, 'limit_exceeded');
      expect(res.body.errors[0].field).toBe('size_mb');
      expect(await volumeRows(t, slug)).toBe(0);
      expectProblem(await getVolume(t, owner.token, slug), 404, 'not_found');
    });

    it('always_on: 5120 is allowed, 5121 → 422 limit_exceeded on size_mb naming 5120', async () => {
      const { owner, slug } = await eggWithPeople(t, { tier: 'always_on' });
      const above = await postVolume(t, owner.token, slug, { size_mb: 2048 });
      expect(above.status).toBe(201);
      const ok = await postVolume(t, owner.token, slug, { size_mb: 5120 });
      expect(ok.status).toBe(200);
      expect(ok.body.size_mb).toBe(5120);

      const res = await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, { size_mb: 5121 }));
      expectProblem(res, 422, 'limit_exceeded');
      expect(res.body.errors[0].field).toBe('size_mb');
      expect(res.body.errors[0].message).toMatch(/\b5120\b/);
      expect((await getVolume(t, owner.token, slug)).body.size_mb).toBe(5120);
    });

    it('GraphQL twin: over the cap is LIMIT_EXCEEDED on sizeMb, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 300 });
      const res = await keepsVolume(t, slug, () => gql(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 1025 }));
      expect(res.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
      expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('sizeMb');
      expect(res.errors?.[0].message).toMatch(/\b1024\b/);

      await t.gateway.services.apps.setTier(slug, 'always_on');
      const onAlwaysOn = await keepsVolume(t, slug, () => gql(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 5121 }));
      expect(onAlwaysOn.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
      const ok = await gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 5120 });
      expect(ok.provisionVolume).toMatchObject({ created: false, volume: { sizeMb: 5120 } });
    });
  });

  describe('validation: 422 validation_failed naming the field, nothing changed', () => {
    it.each([
      ['0', { size_mb: 0 }, 'size_mb'],
      ['-5', { size_mb: -5 }, 'size_mb'],
      ['1.5', { size_mb: 1.5 }, 'size_mb'],
      ['the string "100"', { size_mb: '100' }, 'size_mb'],
      ['null', { size_mb: null }, 'size_mb'],
      ['true', { size_mb: true }, 'size_mb'],
      ['2^31', { size_mb: 2 ** 31 }, 'size_mb'],
      ['missing ({})', {}, 'size_mb'],
      ['an unknown field next to a valid size_mb', { size_mb: 100, iops: 3000 }, 'iops'],
      ['camelCase sizeMb (not an alias)', { sizeMb: 100 }, 'sizeMb'],
    ])('size_mb %s on an egg with a 300 MB volume', async (_name, body, field) => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 300 });
      const res = await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, body));
      expectInvalid(res, field);
      if (field === 'iops') expect(res.body.errors.map((e: { field: string }) => e.field)).not.toContain('size_mb');
      expect((await getVolume(t, owner.token, slug)).body.size_mb).toBe(300);
    });

    it.each([
      ['0', { size_mb: 0 }, 'size_mb'],
      ['-5', { size_mb: -5 }, 'size_mb'],
      ['1.5', { size_mb: 1.5 }, 'size_mb'],
      ['the string "100"', { size_mb: '100' }, 'size_mb'],
      ['missing ({})', {}, 'size_mb'],
      ['an unknown field', { size_mb: 100, iops: 3000 }, 'iops'],
    ])('size_mb %s on an egg without a volume creates none', async (_name, body, field) => {
      const { owner, slug } = await eggWithPeople(t);
      expectInvalid(await postVolume(t, owner.token, slug, body), field);
      expect(await volumeRows(t, slug)).toBe(0);
    });

    it('a body that is not a JSON object → 400 bad_request, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 300 });
      expectProblem(await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, [100])), 400, 'bad_request');
      expectProblem(await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, '{"size_mb": ')), 400, 'bad_request');
    });

    it('GraphQL twin: sizeMb 0 and -5 are BAD_USER_INPUT on sizeMb, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 300 });
      for (const sizeMb of [0, -5]) {
        const res = await keepsVolume(t, slug, () => gql(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb }));
        expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
        expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('sizeMb');
      }
      const fresh = await eggWithPeople(t);
      const res = await gql(t.url, fresh.owner.token, ProvisionVolumeDocument, { app: fresh.slug, sizeMb: 0 });
      expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(await volumeRows(t, fresh.slug)).toBe(0);
    });
  });

  describe('who may', () => {
    it('a collaborator may provision (201), resize (200) and read it', async () => {
      const { owner, collaborator, slug } = await eggWithPeople(t);
      const created = await postVolume(t, collaborator.token, slug, { size_mb: 100 });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ size_mb: 100, status: 'active' });
      const resized = await postVolume(t, collaborator.token, slug, { size_mb: 150 });
      expect(resized.status).toBe(200);
      expect((await getVolume(t, collaborator.token, slug)).body).toEqual(resized.body);
      expect((await getVolume(t, owner.token, slug)).body).toEqual(resized.body);
      expect((await gqlOk(t.url, collaborator.token, VolumeDocument, { app: slug })).volume.sizeMb).toBe(150);
    });

    it('a stranger gets 404 not_found on POST, GET and DELETE, the same as for an unknown slug; nothing changed', async () => {
      const { stranger, slug } = await eggWithPeople(t, { sizeMb: 300 });
      expectProblem(await keepsVolume(t, slug, () => postVolume(t, stranger.token, slug, { size_mb: 100 })), 404, 'not_found');
      expectProblem(await keepsVolume(t, slug, () => getVolume(t, stranger.token, slug)), 404, 'not_found');
      expectProblem(await keepsVolume(t, slug, () => deleteVolume(t, stranger.token, slug)), 404, 'not_found');
      expectProblem(await keepsVolume(t, slug, () => deleteVolume(t, stranger.token, slug, '?now=true')), 404, 'not_found');

      const unknown = unique('ghost');
      expectProblem(await postVolume(t, stranger.token, unknown, { size_mb: 100 }), 404, 'not_found');
      expectProblem(await getVolume(t, stranger.token, unknown), 404, 'not_found');
      expectProblem(await deleteVolume(t, stranger.token, unknown), 404, 'not_found');
    });

    it('a stranger asking to provision an egg without a volume creates none', async () => {
      const { stranger, slug } = await eggWithPeople(t);
      expectProblem(await postVolume(t, stranger.token, slug, { size_mb: 100 }), 404, 'not_found');
      expect(await volumeRows(t, slug)).toBe(0);
    });

    it('GraphQL twin: a stranger gets NOT_FOUND on volume and provisionVolume', async () => {
      const { stranger, slug } = await eggWithPeople(t, { sizeMb: 300 });
      expect((await gql(t.url, stranger.token, VolumeDocument, { app: slug })).errors?.[0].extensions?.code).toBe('NOT_FOUND');
      const res = await keepsVolume(t, slug, () => gql(t.url, stranger.token, ProvisionVolumeDocument, { app: slug, sizeMb: 100 }));
      expect(res.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    });

    it('without a token (or with a bad one): 401 unauthorized on POST, GET and DELETE, nothing changed', async () => {
      const { slug } = await eggWithPeople(t, { sizeMb: 300 });
      for (const token of [null, 'hatch_not-a-real-token']) {
        expectUnauthorized(await keepsVolume(t, slug, () => postVolume(t, token, slug, { size_mb: 100 })));
        expectUnauthorized(await keepsVolume(t, slug, () => getVolume(t, token, slug)));
        expectUnauthorized(await keepsVolume(t, slug, () => deleteVolume(t, token, slug)));
        expectUnauthorized(await keepsVolume(t, slug, () => deleteVolume(t, token, slug, '?now=true')));
      }
      const fresh = await eggWithPeople(t);
      expectUnauthorized(await postVolume(t, null, fresh.slug, { size_mb: 100 }));
      expect(await volumeRows(t, fresh.slug)).toBe(0);
    });

    it('GraphQL twin: without a token provisionVolume is UNAUTHENTICATED', async () => {
      const { slug } = await eggWithPeople(t);
      const res = await gql(t.url, null, ProvisionVolumeDocument, { app: slug, sizeMb: 100 });
      expect(res.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
      expect(await volumeRows(t, slug)).toBe(0);
    });
  });

  describe('concurrent creation', () => {
    it('10 concurrent POSTs on a fresh egg: exactly one 201, nine 200, one volume row', async () => {
      const owner = await makeUser(t.gateway);
      const { slug } = await makeApp(t.url, owner);
      const sizes = Array.from({ length: 10 }, (_, i) => 100 + i);
      const results = await Promise.all(sizes.map((size_mb) => postVolume(t, owner.token, slug, { size_mb })));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      expect(await volumeRows(t, slug)).toBe(1);
      // All answers describe the same volume: one created_at.
      expect(new Set(results.map((r) => r.body.created_at)).size).toBe(1);
      const stored = await storedVolume(t, slug);
      expect(sizes).toContain(stored!.size_mb);
      expect((await getVolume(t, owner.token, slug)).body.size_mb).toBe(stored!.size_mb);
    });

    it('GraphQL twin: 10 concurrent provisionVolume calls report created exactly once', async () => {
      const owner = await makeUser(t.gateway);
      const { slug } = await makeApp(t.url, owner);
      const results = await Promise.all(Array.from({ length: 10 }, () => gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 100 })));
      expect(results.filter((r) => r.provisionVolume.created)).toHaveLength(1);
      expect(await volumeRows(t, slug)).toBe(1);
    });
  });
});
