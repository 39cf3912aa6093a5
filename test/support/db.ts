import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.HATCHERY_TEST_SERVER_URL;
  if (!url) throw new Error('HATCHERY_TEST_SERVER_URL is not set: run the tests with jest (npm test)');
  return url;
}

/** A fresh, migrated database of this test file's own. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `hatchery_t_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${process.env.HATCHERY_TEST_TEMPLATE}`);
  await admin.end();
  const u = new URL(serverUrl());
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new Client({ connectionString: serverUrl() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
