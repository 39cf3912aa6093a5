import { rmSync } from 'node:fs';
import { LogDrainsDocument } from '../../src/client/generated';
import { gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser } from '../support/factories';
import { CliEnv, CliResult, hatch, parseTable, stopAllClis, tempDir } from '../cli-hatch/helpers';
import { DRAIN_ID } from './helpers';

jest.setTimeout(60_000);

function ok(r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`hatch exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r;
}

/** The real CLI (bin/hatch.js) against a real gateway; it registers drains, never contacted (shipping is off). */
describe('hatch drains', () => {
  let t: TestGateway;
  let configDir: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_LOG_DRAIN_WORKER: 'off', HATCHERY_WEBHOOK_ALLOW_HOSTS: 'drains.invalid' });
    configDir = tempDir();
  });
  afterEach(() => stopAllClis());
  afterAll(async () => {
    await t.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('creates (secret printed once), lists (table and --json) and deletes drains', async () => {
    const user = await makeUser(t.gateway);
    const env: CliEnv = { apiUrl: t.url, token: user.token, configDir };
    const { slug } = await makeApp(t.url, user);
    expect(ok(await hatch(env, ['drains', slug])).stdout).toBe(`${slug} has no log drains.\n`);
    expect(JSON.parse(ok(await hatch(env, ['drains', slug, '--json'])).stdout)).toEqual([]);

    const created = ok(await hatch(env, ['drains', 'create', slug, 'https://drains.invalid/logs']));
    const id = /Created log drain (drn_\S+) for https:\/\/drains\.invalid\/logs \(ndjson\)/.exec(created.stdout)?.[1];
    expect(id).toMatch(DRAIN_ID);
    const secret = /Signing secret \(shown only now\): (whsec_\S+)/.exec(created.stdout)?.[1];
    expect(secret).toMatch(/^whsec_/);

    const syslog = JSON.parse(ok(await hatch(env, ['drains', 'create', slug, 'syslog+tls://drains.invalid:6514', '--format', 'syslog', '--json'])).stdout);
    expect(syslog).toMatchObject({ secret: null, logDrain: { format: 'SYSLOG', url: 'syslog+tls://drains.invalid:6514', status: 'ACTIVE' } });

    const listed = JSON.parse(ok(await hatch(env, ['drains', slug, '--json'])).stdout) as Array<Record<string, unknown>>;
    const { logDrains } = await gqlOk(t.url, user.token, LogDrainsDocument, { app: slug });
    expect(listed).toEqual(logDrains);
    expect(listed.map((d) => d.id)).toEqual([syslog.logDrain.id, id]);
    expect(JSON.stringify(listed)).not.toContain(secret);
    const rows = parseTable(ok(await hatch(env, ['drains', 'list', slug])).stdout);
    expect(rows.map((r) => [r.ID, r.URL, r.FORMAT, r.STATUS])).toEqual([
      [syslog.logDrain.id, 'syslog+tls://drains.invalid:6514', 'syslog', 'active'],
      [id, 'https://drains.invalid/logs', 'ndjson', 'active'],
    ]);

    expect(ok(await hatch(env, ['drains', 'delete', slug, id!])).stdout).toBe(`Deleted log drain ${id}\n`);
    expect(JSON.parse(ok(await hatch(env, ['drains', 'delete', slug, syslog.logDrain.id, '--json'])).stdout)).toEqual({ deleted: syslog.logDrain.id });
    expect((await gqlOk(t.url, user.token, LogDrainsDocument, { app: slug })).logDrains).toEqual([]);
  });

  it('a disabled drain shows its status, reason and last error (table and --json)', async () => {
    const user = await makeUser(t.gateway);
    const env: CliEnv = { apiUrl: t.url, token: user.token, configDir };
    const { slug } = await makeApp(t.url, user);
    const { logDrain } = JSON.parse(ok(await hatch(env, ['drains', 'create', slug, 'https://drains.invalid/logs', '--json'])).stdout);
    // As the shipper leaves it after its last failed attempt (test/drains/ndjson disables one for real).
    await t.gateway.ds.query(`UPDATE log_drains SET status = 'disabled', disabled_reason = $2, last_error = $3 WHERE id = $1`, [
      logDrain.id,
      'too many failed deliveries',
      'HTTP 503',
    ]);
    const [row] = parseTable(ok(await hatch(env, ['drains', slug])).stdout);
    expect([row.STATUS, row['LAST ERROR']]).toEqual(['disabled (too many failed deliveries)', 'HTTP 503']);
    const [listed] = JSON.parse(ok(await hatch(env, ['drains', slug, '--json'])).stdout);
    expect(listed).toMatchObject({ id: logDrain.id, status: 'DISABLED', disabledReason: 'too many failed deliveries', lastError: 'HTTP 503' });
  });

  it('refusals: a bad --format is a usage error (2), a private URL fails (not 0) and creates nothing', async () => {
    const user = await makeUser(t.gateway);
    const env: CliEnv = { apiUrl: t.url, token: user.token, configDir };
    const { slug } = await makeApp(t.url, user);
    const bad = await hatch(env, ['drains', 'create', slug, 'https://drains.invalid/x', '--format', 'gelf']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--format must be ndjson or syslog');
    const refused = await hatch(env, ['drains', 'create', slug, 'https://10.0.0.1/x']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/url/);
    expect((await gqlOk(t.url, user.token, LogDrainsDocument, { app: slug })).logDrains).toEqual([]);
  });
});
