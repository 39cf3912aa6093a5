import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { CreateApiTokenDocument, CreateWebhookDocument, DeployDocument, RedeployDocument } from '../../src/client/generated';
import { createLogger } from '../../src/log';
import { hashToken, SecretBox } from '../../src/secrets';
import { makeApp, makeUser, settle } from '../support/factories';
import { gqlOk, rest, startGateway, TEST_KEY, TestGateway } from '../support/gateway';
import { allTables, until } from './helpers';

/**
 * Secrets at rest: after tokens, webhooks and deploys with env secrets have gone through every
 * path that stores them (REST and GraphQL, idempotent deploys, redeploys, the webhook outbox and
 * pg-boss's jobs), a dump of every table holds none of them in clear text, nor in base64 or hex.
 * The dump is not vacuous: it holds the token hashes, the env names and the sealed secrets, which
 * open with the configured key to the very values searched for.
 */
describe('secrets at rest', () => {
  let t: TestGateway;
  const logged: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged.push(String(chunk));
        done();
      },
    });
    t = await startGateway(
      { HATCHERY_JOBS: 'on', HATCHERY_WEBHOOK_ALLOW_HOSTS: 'hooks.invalid', HATCHERY_WEBHOOK_RETRY_SCHEDULE: '10m' },
      { logger: createLogger('debug', sink) },
    );
  });
  afterAll(() => t.stop());

  /** Each row of every table in the public and pgboss schemas as JSON text, like a data-only dump. */
  async function dump(): Promise<Array<{ table: string; row: string }>> {
    const out: Array<{ table: string; row: string }> = [];
    for (const table of await allTables(t.gateway.ds)) {
      const rows: Array<{ j: string }> = await t.gateway.ds.query(`SELECT row_to_json(r)::text AS j FROM ${table} r`);
      for (const r of rows) out.push({ table, row: r.j });
    }
    return out;
  }

  /** The forms a secret could be stored in without real protection. */
  const forms = (secret: string) => [
    secret,
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    Buffer.from(secret).toString('hex'),
    JSON.stringify(secret).slice(1, -1),
  ];

  it('no token, webhook secret or env value is stored in clear text', async () => {
    const owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const created = await gqlOk(t.url, owner.token, CreateApiTokenDocument, { name: 'ci', expiresInDays: 30 });
    const tokens = [owner.token, created.createApiToken.token];

    const hookRest = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'https://hooks.invalid/rest', events: ['deploy'] });
    expect(hookRest.status).toBe(201);
    const hookGql = await gqlOk(t.url, created.createApiToken.token, CreateWebhookDocument, {
      app: slug,
      url: 'https://hooks.invalid/gql',
      events: ['deploy'],
    });
    const webhookSecrets = [hookRest.body.secret as string, hookGql.createWebhook.secret];

    const envValues = [`pw-${randomBytes(12).toString('hex')}`, `key ${randomBytes(9).toString('base64')}`, `ünïcødé-${randomBytes(6).toString('hex')}`];
    const viaRest = await rest(
      t.url,
      owner.token,
      'POST',
      '/deploy',
      { project: slug, env: { DB_PASSWORD: envValues[0], API_KEY: envValues[1] } },
      { 'Idempotency-Key': `idem-${randomBytes(4).toString('hex')}` },
    );
    expect(viaRest.status).toBe(201);
    const viaGql = await gqlOk(t.url, owner.token, DeployDocument, { input: { project: slug, env: { GREETING: envValues[2] } } });
    expect(await settle(t.url, owner, viaRest.body.id)).toBe('LIVE');
    expect(await settle(t.url, owner, viaGql.deploy.id)).toBe('LIVE');
    const again = await gqlOk(t.url, owner.token, RedeployDocument, { id: viaRest.body.id });
    expect(await settle(t.url, owner, again.redeploy.id)).toBe('LIVE');
    // A ping through the outbox path as well as the deploy events.
    expect((await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks/${hookRest.body.id}/test`)).status).toBe(200);
    // The worker (pg-boss) has attempted the deploy events: the outbox and the job tables hold what they will hold.
    await until('every deploy event to be attempted', async () => {
      const [row] = await t.gateway.ds.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE attempts = 0`);
      return row.n === 0;
    });

    const rows = await dump();
    const all = rows.map((r) => r.row).join('\n');
    // Not vacuous: the dump covers the tables that hold the secrets' protected forms.
    expect(rows.map((r) => r.table)).toEqual(
      expect.arrayContaining(['public.api_tokens', 'public.webhooks', 'public.deployments', 'public.webhook_deliveries']),
    );
    expect(rows.some((r) => r.table.startsWith('pgboss.'))).toBe(true);
    for (const token of tokens) expect(all).toContain(hashToken(token));
    for (const name of ['DB_PASSWORD', 'API_KEY', 'GREETING']) expect(all).toContain(name);

    const found: string[] = [];
    const secrets: Array<[string, string]> = [
      ...tokens.flatMap(
        (s) =>
          [
            ['token', s],
            ['token body', s.slice('hatch_'.length)],
          ] as Array<[string, string]>,
      ),
      ...webhookSecrets.flatMap(
        (s) =>
          [
            ['webhook secret', s],
            ['webhook secret body', s.slice('whsec_'.length)],
          ] as Array<[string, string]>,
      ),
      ...envValues.map((s) => ['env value', s] as [string, string]),
    ];
    for (const [what, secret] of secrets) {
      for (const form of forms(secret)) {
        for (const r of rows) if (r.row.includes(form)) found.push(`${what} in ${r.table}`);
        if (logged.some((line) => line.includes(form))) found.push(`${what} in the log`);
      }
    }
    expect(found).toEqual([]);

    // What is stored is the sealed form, under the configured key.
    const box = new SecretBox(Buffer.from(TEST_KEY, 'base64'));
    const sealedHooks: Array<{ id: string; secret_sealed: string }> = await t.gateway.ds.query('SELECT id, secret_sealed FROM webhooks');
    expect(sealedHooks.map((h) => box.open(h.secret_sealed)).sort()).toEqual([...webhookSecrets].sort());
    const sealedEnvs: Array<{ env_sealed: string }> = await t.gateway.ds.query('SELECT env_sealed FROM deployments WHERE env_sealed IS NOT NULL ORDER BY id');
    const opened = sealedEnvs.map((d) => JSON.parse(box.open(d.env_sealed)));
    expect(opened).toEqual([
      { DB_PASSWORD: envValues[0], API_KEY: envValues[1] },
      { GREETING: envValues[2] },
      { DB_PASSWORD: envValues[0], API_KEY: envValues[1] },
    ]);
    // The log was written to (at debug level), so its silence about secrets means something.
    expect(logged.length).toBeGreaterThan(0);
  });
});
