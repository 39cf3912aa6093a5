import { DeleteVolumeDocument, ProvisionVolumeDocument, VolumeDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { expectInvalid, expectProblem } from '../rest/problem';
import {
  CLI_TIMEOUT_MS,
  DAY_MS,
  deleteVolume,
  eggWithPeople,
  getVolume,
  GRACE_MS,
  keepsVolume,
  postVolume,
  setVolumeUsage,
  storedVolume,
  usageRow,
  volumeRows,
} from './helpers';

jest.setTimeout(2 * CLI_TIMEOUT_MS);

/**
 * The volume state table of the service document, one test per transition:
 * active → grace_deleting (DELETE), grace_deleting → erased (7 days), grace_deleting → active
 * (POST restores), active | grace_deleting → deleted (DELETE ?now=true).
 */
describe('volume states', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  const inSevenDays = () => new Date(clock.now().getTime() + GRACE_MS).toISOString();

  describe('active + DELETE without now → grace_deleting', () => {
    it('200 with the volume in grace_deleting, erase_at exactly now + 7 days; GET still shows it', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const before = (await getVolume(t, owner.token, slug)).body;
      clock.advance(60_000);
      const eraseAt = inSevenDays();

      const res = await deleteVolume(t, owner.token, slug);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ ...before, status: 'grace_deleting', erase_at: eraseAt });
      expect(await storedVolume(t, slug)).toEqual({ size_mb: 100, status: 'grace_deleting', erase_at: eraseAt, created_at: before.created_at });

      const read = await getVolume(t, owner.token, slug);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(res.body);
    });

    it('?now=false behaves like no now: 200 grace_deleting, erase_at now + 7 days', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const eraseAt = inSevenDays();
      const res = await deleteVolume(t, owner.token, slug, '?now=false');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ size_mb: 100, status: 'grace_deleting', erase_at: eraseAt });
      expect((await getVolume(t, owner.token, slug)).body).toEqual(res.body);
    });

    it('a collaborator may delete it too', async () => {
      const { collaborator, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const res = await deleteVolume(t, collaborator.token, slug);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('grace_deleting');
    });

    it('GraphQL twin: deleteVolume returns it GRACE_DELETING with eraseAt now + 7 days', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const eraseAt = inSevenDays();
      const { deleteVolume: deleted } = await gqlOk(t.url, owner.token, DeleteVolumeDocument, { app: slug });
      expect(deleted).toMatchObject({ sizeMb: 100, status: 'GRACE_DELETING', eraseAt, mount: '/data' });
      expect((await gqlOk(t.url, owner.token, VolumeDocument, { app: slug })).volume).toEqual(deleted);
    });
  });

  describe('grace_deleting + DELETE without now', () => {
    it('200 and unchanged: the erase_at of the first DELETE is kept', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const first = await deleteVolume(t, owner.token, slug);
      expect(first.status).toBe(200);
      clock.advance(2 * DAY_MS);

      const again = await keepsVolume(t, slug, () => deleteVolume(t, owner.token, slug));
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect((await gqlOk(t.url, owner.token, DeleteVolumeDocument, { app: slug })).deleteVolume?.eraseAt).toBe(first.body.erase_at);
      expect((await getVolume(t, owner.token, slug)).body.erase_at).toBe(first.body.erase_at);
    });
  });

  describe('grace_deleting + 7 days elapse → erased', () => {
    it('is not erased one second before erase_at, and is erased at it: GET 404 and the runtime usage is gone', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      await setVolumeUsage(t, slug, 40);
      const deleted = await deleteVolume(t, owner.token, slug);
      expect(deleted.status).toBe(200);
      const eraseAt = new Date(deleted.body.erase_at).getTime();
      expect(eraseAt).toBe(clock.now().getTime() + GRACE_MS);

      clock.set(new Date(eraseAt - 1000));
      await t.gateway.services.volumes.eraseExpired();
      const still = await getVolume(t, owner.token, slug);
      expect(still.status).toBe(200);
      expect(still.body).toEqual({ ...deleted.body, used_mb: 40 });
      expect(await volumeRows(t, slug)).toBe(1);
      expect(await usageRow(t, slug)).toBe(40);

      clock.advance(1000);
      expect(await t.gateway.services.volumes.eraseExpired()).toBeGreaterThanOrEqual(1);
      expectProblem(await getVolume(t, owner.token, slug), 404, 'not_found');
      expect(await volumeRows(t, slug)).toBe(0);
      expect(await usageRow(t, slug)).toBeNull();
      expect((await gql(t.url, owner.token, VolumeDocument, { app: slug })).errors?.[0].extensions?.code).toBe('NOT_FOUND');

      // A DELETE after erasure finds nothing; a POST provisions a brand-new, empty volume.
      expectProblem(await deleteVolume(t, owner.token, slug), 404, 'not_found');
      const fresh = await postVolume(t, owner.token, slug, { size_mb: 50 });
      expect(fresh.status).toBe(201);
      expect(fresh.body).toMatchObject({ size_mb: 50, used_mb: 0, status: 'active', erase_at: null, created_at: clock.now().toISOString() });
    });

    it('an active volume is never erased, however much time passes', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      await setVolumeUsage(t, slug, 40);
      clock.advance(30 * DAY_MS);
      await t.gateway.services.volumes.eraseExpired();
      expect((await getVolume(t, owner.token, slug)).body).toMatchObject({ status: 'active', size_mb: 100, used_mb: 40 });
      expect(await usageRow(t, slug)).toBe(40);
    });
  });

  describe('grace_deleting + POST → active (restored)', () => {
    it('200, active, erase_at null, created_at and data kept; it is then not erased after the grace period', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      await setVolumeUsage(t, slug, 40);
      const deleted = await deleteVolume(t, owner.token, slug);
      expect(deleted.body.status).toBe('grace_deleting');
      clock.advance(3 * DAY_MS);

      const restored = await postVolume(t, owner.token, slug, { size_mb: 250 });
      expect(restored.status).toBe(200);
      expect(restored.body).toEqual({
        size_mb: 250,
        used_mb: 40,
        status: 'active',
        mount: '/data',
        over_quota: false,
        created_at: deleted.body.created_at,
        erase_at: null,
      });
      expect(await storedVolume(t, slug)).toEqual({ size_mb: 250, status: 'active', erase_at: null, created_at: deleted.body.created_at });
      expect((await getVolume(t, owner.token, slug)).body).toEqual(restored.body);

      clock.advance(GRACE_MS);
      await t.gateway.services.volumes.eraseExpired();
      expect((await getVolume(t, owner.token, slug)).body).toEqual(restored.body);
      expect(await usageRow(t, slug)).toBe(40);
    });

    it('a restore over the tier cap is refused (422 limit_exceeded) and leaves it grace_deleting', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const deleted = await deleteVolume(t, owner.token, slug);
      const res = await keepsVolume(t, slug, () => postVolume(t, owner.token, slug, { size_mb: 1025 }));
      expectProblem(res, 422, 'limit_exceeded');
      expect((await getVolume(t, owner.token, slug)).body).toEqual(deleted.body);
    });

    it('GraphQL twin: provisionVolume on a GRACE_DELETING volume restores it (created false, ACTIVE, eraseAt null)', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      await gqlOk(t.url, owner.token, DeleteVolumeDocument, { app: slug });
      const { provisionVolume } = await gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 100 });
      expect(provisionVolume).toMatchObject({ created: false, volume: { sizeMb: 100, status: 'ACTIVE', eraseAt: null } });
      expect((await storedVolume(t, slug))?.status).toBe('active');
    });
  });

  describe('DELETE ?now=true → deleted at once', () => {
    it('active: 204 with no body; GET 404 at once; the row and the runtime usage are gone', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      await setVolumeUsage(t, slug, 40);
      const res = await deleteVolume(t, owner.token, slug, '?now=true');
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectProblem(await getVolume(t, owner.token, slug), 404, 'not_found');
      expect(await volumeRows(t, slug)).toBe(0);
      expect(await usageRow(t, slug)).toBeNull();

      // Irreversible: a POST now provisions a new, empty volume.
      const again = await postVolume(t, owner.token, slug, { size_mb: 100 });
      expect(again.status).toBe(201);
      expect(again.body.used_mb).toBe(0);
    });

    it('grace_deleting: 204; GET 404 at once', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      expect((await deleteVolume(t, owner.token, slug)).status).toBe(200);
      const res = await deleteVolume(t, owner.token, slug, '?now=true');
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectProblem(await getVolume(t, owner.token, slug), 404, 'not_found');
      expect(await volumeRows(t, slug)).toBe(0);
    });

    it('GraphQL twin: deleteVolume(now: true) returns null and the volume is gone', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const res = await gqlOk(t.url, owner.token, DeleteVolumeDocument, { app: slug, now: true });
      expect(res.deleteVolume).toBeNull();
      expect((await gql(t.url, owner.token, VolumeDocument, { app: slug })).errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(await volumeRows(t, slug)).toBe(0);
    });
  });

  describe('DELETE errors', () => {
    it('on an egg without a volume: 404 not_found, with and without now (GraphQL NOT_FOUND)', async () => {
      const { owner, slug } = await eggWithPeople(t);
      expectProblem(await deleteVolume(t, owner.token, slug), 404, 'not_found');
      expectProblem(await deleteVolume(t, owner.token, slug, '?now=true'), 404, 'not_found');
      const res = await gql(t.url, owner.token, DeleteVolumeDocument, { app: slug });
      expect(res.errors?.[0].extensions?.code).toBe('NOT_FOUND');
      expect(await volumeRows(t, slug)).toBe(0);
    });

    it.each(['?now=yes', '?now=1'])('%s → 422 validation_failed on now, nothing changed', async (query) => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const before = (await getVolume(t, owner.token, slug)).body;
      const res = await keepsVolume(t, slug, () => deleteVolume(t, owner.token, slug, query));
      expectInvalid(res, 'now');
      expect((await getVolume(t, owner.token, slug)).body).toEqual(before);
    });

    it('an unknown query parameter → 422 naming it, nothing changed', async () => {
      const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
      const res = await keepsVolume(t, slug, () => deleteVolume(t, owner.token, slug, '?force=true'));
      expectInvalid(res, 'force');
      expect((await getVolume(t, owner.token, slug)).body.status).toBe('active');
    });
  });
});
