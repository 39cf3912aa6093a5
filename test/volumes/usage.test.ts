import { VolumeDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { unique } from '../support/factories';
import { admin, CLI_TIMEOUT_MS, eggWithPeople, getVolume, postVolume, setVolumeUsage, storedVolume, usageRow } from './helpers';

jest.setTimeout(4 * CLI_TIMEOUT_MS);

describe('volume used_mb and over_quota (admin set-volume-usage)', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  it('GET shows the used_mb the runtime reports; over a 100 MB size it is over_quota (REST and GraphQL)', async () => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
    expect((await getVolume(t, owner.token, slug)).body).toMatchObject({ size_mb: 100, used_mb: 0, over_quota: false });

    await setVolumeUsage(t, slug, 150);
    expect(await usageRow(t, slug)).toBe(150);

    const res = await getVolume(t, owner.token, slug);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ size_mb: 100, used_mb: 150, status: 'active', over_quota: true });
    const { volume } = await gqlOk(t.url, owner.token, VolumeDocument, { app: slug });
    expect(volume).toMatchObject({ sizeMb: 100, usedMb: 150, overQuota: true });
  });

  it('the volumes-measure job measures every egg that has a volume, and only those', async () => {
    const a = await eggWithPeople(t, { sizeMb: 100 });
    const b = await eggWithPeople(t, { sizeMb: 100 });
    const none = await eggWithPeople(t);
    await setVolumeUsage(t, a.slug, 40);
    await setVolumeUsage(t, b.slug, 7);
    const measured = await t.gateway.services.volumes.measure();
    expect(measured.get(a.slug)).toBe(40);
    expect(measured.get(b.slug)).toBe(7);
    expect(measured.has(none.slug)).toBe(false);
  });

  it('used within the size is not over quota; used equal to the size is not over quota either', async () => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 200 });
    await setVolumeUsage(t, slug, 150);
    expect((await getVolume(t, owner.token, slug)).body).toMatchObject({ size_mb: 200, used_mb: 150, over_quota: false });

    const exact = await postVolume(t, owner.token, slug, { size_mb: 150 });
    expect(exact.status).toBe(200);
    expect(exact.body).toMatchObject({ size_mb: 150, used_mb: 150, over_quota: false });
  });

  it('shrinking below used_mb is allowed: 200, the new size, over_quota true; growing again clears it', async () => {
    const { owner, collaborator, slug } = await eggWithPeople(t, { sizeMb: 200 });
    await setVolumeUsage(t, slug, 150);

    const shrunk = await postVolume(t, owner.token, slug, { size_mb: 120 });
    expect(shrunk.status).toBe(200);
    expect(shrunk.body).toMatchObject({ size_mb: 120, used_mb: 150, status: 'active', mount: '/data', over_quota: true, erase_at: null });
    expect((await storedVolume(t, slug))?.size_mb).toBe(120);
    expect((await getVolume(t, collaborator.token, slug)).body).toEqual(shrunk.body);

    const grown = await postVolume(t, owner.token, slug, { size_mb: 400 });
    expect(grown.status).toBe(200);
    expect(grown.body).toMatchObject({ size_mb: 400, used_mb: 150, over_quota: false });
  });

  it('a later report replaces the earlier one', async () => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
    await setVolumeUsage(t, slug, 150);
    await setVolumeUsage(t, slug, 30);
    expect((await getVolume(t, owner.token, slug)).body).toMatchObject({ used_mb: 30, over_quota: false });
  });

  it.each(['abc', '-1', '1.5', '', '1e3'])('set-volume-usage with mb %p → non-zero exit, nothing written', async (mb) => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
    await setVolumeUsage(t, slug, 40);
    const res = await admin(t.db.url, 'set-volume-usage', slug, mb);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(typeof JSON.parse(res.stderr).error).toBe('string');
    expect(await usageRow(t, slug)).toBe(40);
    expect((await getVolume(t, owner.token, slug)).body.used_mb).toBe(40);
  });

  it('set-volume-usage on an unknown slug → non-zero exit naming it, nothing written', async () => {
    const slug = unique('ghost');
    const res = await admin(t.db.url, 'set-volume-usage', slug, '150');
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    const err = JSON.parse(res.stderr);
    expect(err.error).toContain(slug);
    expect(err.error).toMatch(/not found/i);
    expect(await usageRow(t, slug)).toBeNull();
  });

  it('set-volume-usage without the mb argument → non-zero exit with usage text', async () => {
    const { slug } = await eggWithPeople(t);
    const res = await admin(t.db.url, 'set-volume-usage', slug);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('set-volume-usage');
    expect(await usageRow(t, slug)).toBeNull();
  });
});
