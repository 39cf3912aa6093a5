import fc from 'fast-check';
import { CreateAppDocument } from '../../src/client/generated';
import { deploymentSuffix, hostLabel, HostTarget, parseHostLabel, SLUG_RE } from '../../src/modules/apps/hosts';
import { newId } from '../../src/ids';
import { gql, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser } from '../support/factories';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

/** Every slug createApp accepts (and many it refuses: they are filtered by SLUG_RE). */
const slug = fc
  .tuple(
    fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'),
    fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-', '-', '-'), { minLength: 1, maxLength: 38 }),
    fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'),
  )
  .map(([a, mid, z]) => a + mid.join('') + z)
  .filter((s) => SLUG_RE.test(s));

const suffix = fc
  .constantFrom(...'0123456789abcdefghjkmnpqrstvwxyz')
  .chain((c) => fc.array(fc.constantFrom(...'0123456789abcdefghjkmnpqrstvwxyz'), { minLength: 7, maxLength: 7 }).map((r) => c + r.join('')));
const pr = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 2_147_483_647 }));

const target: fc.Arbitrary<HostTarget> = fc.oneof(
  slug.map((s) => ({ kind: 'app' as const, slug: s })),
  fc.tuple(slug, suffix).map(([s, x]) => ({ kind: 'deployment' as const, slug: s, suffix: x })),
  fc.tuple(slug, pr).map(([s, n]) => ({ kind: 'preview' as const, slug: s, pr: n })),
);

describe('egg host names', () => {
  it('no host can belong to two eggs: a host names exactly one target, and its slug', () => {
    fc.assert(
      fc.property(target, target, (a, b) => {
        expect(parseHostLabel(hostLabel(a))).toEqual(a);
        if (hostLabel(a) === hostLabel(b)) expect(a).toEqual(b);
        else expect(a).not.toEqual(b);
      }),
      { numRuns: 20_000, seed },
    );
  });

  it('no slug is another egg’s deployment or preview host, and every host is a valid DNS label', () => {
    fc.assert(
      fc.property(target, slug, (t, s) => {
        const label = hostLabel(t);
        if (t.kind !== 'app') expect(label).not.toBe(s);
        expect(label.length).toBeLessThanOrEqual(63);
        expect(label).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
      }),
      { numRuns: 20_000, seed },
    );
  });

  it('the attack from the report: the slug `<egg>-pr-1` is not the host of that egg’s preview 1', () => {
    expect(hostLabel({ kind: 'preview', slug: 'alice-egg', pr: 1 })).toBe('alice-egg--pr-1');
    expect(parseHostLabel('alice-egg-pr-1')).toEqual({ kind: 'app', slug: 'alice-egg-pr-1' });
    const id = newId('dep');
    expect(parseHostLabel(`alice-egg--${deploymentSuffix(id)}`)).toEqual({ kind: 'deployment', slug: 'alice-egg', suffix: id.slice(-8) });
    // Hosts that name nothing.
    for (const label of ['alice-egg--', 'alice-egg--pr-0', 'alice-egg--pr-01', 'alice--egg', 'a--b--c', 'alice-egg--abc', 'alice-egg--pr-2147483648']) {
      expect(parseHostLabel(label)).toBeNull();
    }
  });
});

describe('egg host names through the API', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_APPS_DOMAIN: 'eggs.test' });
  });
  afterAll(() => t.stop());

  it('createApp refuses a slug with `--` (422 naming slug), and nothing is stored', async () => {
    const user = await makeUser(t.gateway);
    for (const s of ['alice--egg', 'alice-egg--pr-1', 'abc--defghjkm']) {
      const res = await gql(t.url, user.token, CreateAppDocument, { slug: s });
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', errors: [{ field: 'slug' }] });
    }
    const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM apps WHERE owner_id = $1', [user.id]);
    expect(n).toBe(0);
    // Single dashes are still fine.
    expect((await gqlOk(t.url, user.token, CreateAppDocument, { slug: `a-b-${Date.now()}` })).createApp.url).toMatch(/^https:\/\/a-b-\d+\.eggs\.test$/);
  });

  it('deployments and previews get `--` hosts; an egg named like another egg’s preview gets its own URL', async () => {
    const alice = await makeUser(t.gateway);
    const mallory = await makeUser(t.gateway);
    const egg = await makeApp(t.url, alice);
    const dep = await deploy(t.url, alice, egg.slug);
    expect(dep.url).toBe(`https://${egg.slug}--${dep.id.slice(-8)}.eggs.test`);
    const preview = await rest(t.url, alice.token, 'POST', `/v1/apps/${egg.slug}/previews`, { pr_number: 1 });
    expect(preview.status).toBe(201);
    expect(preview.body).toMatchObject({ slug: `${egg.slug}-pr-1`, url: `https://${egg.slug}--pr-1.eggs.test` });

    const copy = await makeApp(t.url, mallory, `${egg.slug}-pr-1`);
    expect(copy.url).toBe(`https://${egg.slug}-pr-1.eggs.test`);
    expect(copy.url).not.toBe(preview.body.url);
    const urls = [egg.url, dep.url, preview.body.url, copy.url];
    expect(new Set(urls).size).toBe(urls.length);
  });
});
