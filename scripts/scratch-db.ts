import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { loadConfig } from '../src/config';
import { startEmbeddedPostgres } from '../src/db/embedded';

/**
 * A throwaway database on DATABASE_URL's server, or on the embedded one in the data dir, for
 * tools that need a real PostgreSQL (migration generation and the drift check).
 */
export async function withScratchDatabase<T>(work: (url: string) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(config.dataDir);
  const serverUrl = new URL(config.databaseUrl ?? embedded!.url);
  const name = `hatchery_scratch_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const scratch = new URL(serverUrl);
  scratch.pathname = `/${name}`;
  try {
    return await work(scratch.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    await embedded?.stop();
  }
}
