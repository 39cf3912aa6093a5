import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createDataSource } from '../../src/data-source';
import { startEmbeddedPostgres } from '../../src/db/embedded';

/**
 * One PostgreSQL for the run: DATABASE_URL's server when set, else an embedded one. A template
 * database is migrated once; each test file clones it (CREATE DATABASE … TEMPLATE), so files
 * share nothing.
 */
export default async function globalSetup(): Promise<void> {
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const dir = mkdtempSync(path.join(tmpdir(), 'hatchery-test-'));
    chmodSync(dir, 0o755); // as root: the cluster stays in here, not in /var/lib/hatchery-postgres
    const pg = await startEmbeddedPostgres(dir);
    (globalThis as Record<string, unknown>).__embeddedPg = pg;
    serverUrl = pg.url;
  }
  const template = `hatchery_tmpl_${process.pid}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  const ds = createDataSource(withDatabase(serverUrl, template));
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  await ds.destroy();
  process.env.HATCHERY_TEST_SERVER_URL = serverUrl;
  // Gateways the suites start as processes run eggs on the simulated runtime, whether or not a
  // Docker Engine answers here; test/docker starts its own on Docker.
  process.env.HATCHERY_RUNTIME ??= 'simulated';
  // Gateways in tests serve eggs on a free port, never 8080 (several run at once).
  process.env.HATCHERY_ROUTER_PORT ??= '0';
  process.env.HATCHERY_TEST_TEMPLATE = template;
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
