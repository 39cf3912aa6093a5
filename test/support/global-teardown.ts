import { Client } from 'pg';
import type { EmbeddedPostgres } from '../../src/db/embedded';

export default async function globalTeardown(): Promise<void> {
  const admin = new Client({ connectionString: process.env.HATCHERY_TEST_SERVER_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${process.env.HATCHERY_TEST_TEMPLATE} WITH (FORCE)`);
  await admin.end();
  await ((globalThis as Record<string, unknown>).__embeddedPg as EmbeddedPostgres | undefined)?.stop();
}
