import { execFile } from 'node:child_process';
import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { ViewerDocument } from '../../src/client/generated';
import { admin, CLI_TIMEOUT_MS, CliResult, ROOT } from '../support/cli';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, unique } from '../support/factories';
import { asError } from '../support/errors';

const AppTierDocument = parse(`query AppTier($slug: String!) { app(slug: $slug) { slug tier } }`) as TypedDocumentNode<
  { app: { slug: string; tier: string } },
  { slug: string }
>;

/** `npm run --silent admin -- …`, exactly as the README and docs/operations.md document it. */
function npmAdmin(databaseUrl: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'npm',
      ['run', '--silent', 'admin', '--', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: CLI_TIMEOUT_MS },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(asError(err));
        resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
      },
    );
  });
}

jest.setTimeout(3 * CLI_TIMEOUT_MS);

/**
 * Wrong argument counts are usage errors: exit code 2, one JSON line on stderr whose message
 * says how the command is used, nothing on stdout, and the database untouched.
 */
describe('admin CLI: argument counts', () => {
  let t: TestGateway;
  let db: string;

  beforeAll(async () => {
    t = await startGateway();
    db = t.db.url;
  });
  afterAll(() => t.stop());

  const userCount = async (): Promise<number> => (await t.gateway.ds.query('SELECT count(*)::int AS n FROM users'))[0].n;

  /** A usage refusal naming the command and listing its arguments. */
  function expectUsage(res: CliResult, command: string) {
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^[^\n]+\n$/);
    const err = JSON.parse(res.stderr) as { error: string };
    expect(err.error).toMatch(/usage/i);
    expect(err.error).toContain(`${command} takes`);
    expect(err.error).toContain('set-tier <slug> <free|always_on>');
    expect(err.error).toContain('create-user <email>');
  }

  async function eggOnFree() {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const tier = async () => (await gqlOk(t.url, owner.token, AppTierDocument, { slug })).app.tier;
    expect(await tier()).toBe('FREE');
    return { slug, tier };
  }

  it('set-tier with only a slug → exit 2 with usage; the egg keeps its tier', async () => {
    const egg = await eggOnFree();
    expectUsage(await admin(db, 'set-tier', egg.slug), 'set-tier');
    expect(await egg.tier()).toBe('FREE');
  });

  it('set-tier without arguments → exit 2 with usage', async () => {
    const egg = await eggOnFree();
    expectUsage(await admin(db, 'set-tier'), 'set-tier');
    expect(await egg.tier()).toBe('FREE');
  });

  it('set-tier with an extra argument → exit 2 with usage; the egg keeps its tier', async () => {
    const egg = await eggOnFree();
    expectUsage(await admin(db, 'set-tier', egg.slug, 'always_on', 'now'), 'set-tier');
    expect(await egg.tier()).toBe('FREE');
  });

  it('create-user with an extra argument → exit 2 with usage; no account is created', async () => {
    const email = `${unique('extra')}@example.com`;
    const before = await userCount();
    expectUsage(await admin(db, 'create-user', email, 'extra'), 'create-user');
    expect(await userCount()).toBe(before);
    expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM users WHERE email = $1', [email]))[0].n).toBe(0);
  });

  it('through `npm run --silent admin -- create-user x@y.z`: stdout is exactly one JSON line {user_id, token}', async () => {
    const before = await userCount();
    const res = await npmAdmin(db, 'create-user', 'x@y.z');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^\{[^\n]*\}\n$/);
    const out = JSON.parse(res.stdout) as Record<string, string>;
    expect(Object.keys(out).sort()).toEqual(['token', 'user_id']);
    expect(out.user_id).toMatch(/^usr_/);
    expect(out.token).toMatch(/^hatch_/);
    expect(await userCount()).toBe(before + 1);
    expect((await gqlOk(t.url, out.token, ViewerDocument, {})).viewer).toMatchObject({ id: out.user_id, email: 'x@y.z' });
  });
});
