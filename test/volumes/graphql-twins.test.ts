import { DeleteVolumeDocument, ProvisionVolumeDocument, VolumeDocument } from '../../src/client/generated';
import { ManualClock } from '../../src/clock';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { DAY_MS, eggWithPeople, GRACE_MS, keepsVolume, storedVolume } from './helpers';

/** GraphQL twins of volume transitions that the feature files cover over REST only. */
describe('volumes: GraphQL twins', () => {
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  it('provisionVolume restoring a GRACE_DELETING volume over the tier cap is LIMIT_EXCEEDED on sizeMb naming the cap; it stays GRACE_DELETING with its eraseAt', async () => {
    const { owner, slug } = await eggWithPeople(t, { sizeMb: 100 });
    const { deleteVolume: deleted } = await gqlOk(t.url, owner.token, DeleteVolumeDocument, { app: slug });
    expect(deleted).toMatchObject({ status: 'GRACE_DELETING', eraseAt: new Date(clock.now().getTime() + GRACE_MS).toISOString() });
    clock.advance(DAY_MS);

    const res = await keepsVolume(t, slug, () => gql(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 1025 }));
    expect(res.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('sizeMb');
    expect(res.errors?.[0].message).toMatch(/\b1024\b/);
    expect(res.data ?? null).toBeNull();
    expect((await gqlOk(t.url, owner.token, VolumeDocument, { app: slug })).volume).toEqual(deleted);

    // On always_on the cap is 5120: 5121 is refused the same way, 5120 restores it.
    await t.gateway.services.apps.setTier(slug, 'always_on');
    const overAlwaysOn = await keepsVolume(t, slug, () => gql(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 5121 }));
    expect(overAlwaysOn.errors?.[0].extensions?.code).toBe('LIMIT_EXCEEDED');
    expect(overAlwaysOn.errors?.[0].message).toMatch(/\b5120\b/);
    expect((await storedVolume(t, slug))?.status).toBe('grace_deleting');
    const { provisionVolume } = await gqlOk(t.url, owner.token, ProvisionVolumeDocument, { app: slug, sizeMb: 5120 });
    expect(provisionVolume).toMatchObject({ created: false, volume: { sizeMb: 5120, status: 'ACTIVE', eraseAt: null, createdAt: deleted?.createdAt } });
  });
});
