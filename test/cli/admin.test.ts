import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { ViewerDocument } from '../../src/client/generated';
import { admin, CLI_TIMEOUT_MS } from '../support/cli';
import { gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, unique } from '../support/factories';

/** The one JSON line the command printed on a stream. */
function oneJsonLine(text: string): Record<string, unknown> {
  expect(text).toMatch(/^[^\n]+\n$/);
  return JSON.parse(text);
}

const AppTierDocument = parse(`query AppTier($slug: String!) { app(slug: $slug) { slug tier } }`) as TypedDocumentNode<
  { app: { slug: string; tier: string } },
  { slug: string }
>;

jest.setTimeout(3 * CLI_TIMEOUT_MS);

describe('admin CLI', () => {
  let t: TestGateway;
  let db: string;

  beforeAll(async () => {
    t = await startGateway();
    db = t.db.url;
  });
  afterAll(() => t.stop());

  const userCount = async (): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM users'))[0].n;
  const usersWithEmail = async (email: string): Promise<number> =>
    (await t.gateway.ds.query('SELECT count(*)::int AS n FROM users WHERE email = $1', [email]))[0].n;

  describe('create-user', () => {
    it('prints exactly one JSON line {user_id, token}, and the token works against the gateway', async () => {
      const email = `${unique('cli')}@example.com`;
      const res = await admin(db, 'create-user', email);
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      const out = oneJsonLine(res.stdout);
      expect(Object.keys(out).sort()).toEqual(['token', 'user_id']);
      expect(out.user_id).toMatch(/^usr_/);
      expect(out.token).toMatch(/^hatch_/);

      const token = out.token as string;
      const viewer = (await gqlOk(t.url, token, ViewerDocument, {})).viewer;
      expect(viewer).toMatchObject({ id: out.user_id, email });
      expect((await rest(t.url, token, 'GET', '/deployments')).status).toBe(200);
      // Only its hash is stored.
      expect(JSON.stringify(await t.gateway.ds.query('SELECT * FROM api_tokens WHERE user_id = $1', [out.user_id]))).not.toContain(
        token.slice('hatch_'.length),
      );
    });

    it('a duplicate email → non-zero exit, a JSON error on stderr, and no second account', async () => {
      const email = `${unique('dup')}@example.com`;
      const first = await admin(db, 'create-user', email);
      expect(first.code).toBe(0);
      const firstToken = oneJsonLine(first.stdout).token as string;

      const second = await admin(db, 'create-user', email);
      expect(second.code).not.toBe(0);
      expect(second.stdout).toBe('');
      const err = oneJsonLine(second.stderr);
      expect(typeof err.error).toBe('string');
      expect(err.error).toMatch(/already exists|taken|exists/i);

      expect(await usersWithEmail(email)).toBe(1);
      expect((await gqlOk(t.url, firstToken, ViewerDocument, {})).viewer.email).toBe(email);
    });

    it.each(['not-an-email', 'a@b', '@example.com', 'two words@example.com'])('an invalid email %p → non-zero exit, nothing created', async (email) => {
      const before = await userCount();
      const res = await admin(db, 'create-user', email);
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(oneJsonLine(res.stderr).error).toMatch(/email/i);
      expect(await userCount()).toBe(before);
    });

    it('without the email argument → non-zero exit with usage text', async () => {
      const res = await admin(db, 'create-user');
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/usage/i);
      expect(res.stderr).toContain('create-user');
    });
  });

  describe('set-tier', () => {
    it('set-tier <slug> always_on prints {slug, tier} and the egg becomes ALWAYS_ON; free sets it back', async () => {
      const owner = await makeUser(t.gateway);
      const app = await makeApp(t.url, owner);
      expect((await gqlOk(t.url, owner.token, AppTierDocument, { slug: app.slug })).app.tier).toBe('FREE');

      const res = await admin(db, 'set-tier', app.slug, 'always_on');
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      expect(oneJsonLine(res.stdout)).toEqual({ slug: app.slug, tier: 'always_on' });
      expect((await gqlOk(t.url, owner.token, AppTierDocument, { slug: app.slug })).app).toEqual({ slug: app.slug, tier: 'ALWAYS_ON' });

      const back = await admin(db, 'set-tier', app.slug, 'free');
      expect(back.code).toBe(0);
      expect(oneJsonLine(back.stdout)).toEqual({ slug: app.slug, tier: 'free' });
      expect((await gqlOk(t.url, owner.token, AppTierDocument, { slug: app.slug })).app.tier).toBe('FREE');
    });

    it('an unknown tier → non-zero exit naming the valid tiers; the egg is unchanged', async () => {
      const owner = await makeUser(t.gateway);
      const app = await makeApp(t.url, owner);
      const res = await admin(db, 'set-tier', app.slug, 'gold');
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      const err = oneJsonLine(res.stderr);
      expect(err.error).toMatch(/tier/i);
      expect(err.error).toMatch(/always_on/);
      expect(err.error).toMatch(/free/);
      expect((await gqlOk(t.url, owner.token, AppTierDocument, { slug: app.slug })).app.tier).toBe('FREE');
    });

    it('an unknown slug → non-zero exit saying the egg was not found', async () => {
      const slug = unique('ghost');
      const res = await admin(db, 'set-tier', slug, 'always_on');
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      const err = oneJsonLine(res.stderr);
      expect(err.error).toContain(slug);
      expect(err.error).toMatch(/not found/i);
    });
  });

  describe('usage', () => {
    it('no command → non-zero exit with usage text listing the commands', async () => {
      const res = await admin(db);
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/usage/i);
      expect(res.stderr).toContain('create-user');
      expect(res.stderr).toContain('set-tier');
    });

    it('an unknown command → non-zero exit with usage text naming it', async () => {
      const res = await admin(db, 'frobnicate', 'x');
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/usage/i);
      expect(res.stderr).toContain('frobnicate');
      expect(res.stderr).toContain('create-user');
    });
  });
});
