import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { SnakeNamingStrategy } from '../../src/db/naming';
import { withDatabase } from './global-setup';

/** An empty database of this file's own, migrated by hand. */
export async function emptyDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const server = process.env.HATCHERY_TEST_SERVER_URL!;
  const name = `${prefix}_${Date.now().toString(36)}_${process.pid}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    url: withDatabase(server, name),
    async drop() {
      const c = new Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A data source running the first `upTo` migrations. */
export const dataSource = (url: string, upTo: number) =>
  new DataSource({
    type: 'postgres',
    url,
    migrations: migrations.slice(0, upTo),
    namingStrategy: new SnakeNamingStrategy(),
    migrationsTransactionMode: 'each',
  });

/**
 * Alice (`usr_a`), her egg `alice-egg` (`app_1`) and its live deployment `deploymentId`, all made at
 * `at`: the rows a migrated database needs before it can hold log lines.
 */
export async function seedLiveDeployment(ds: DataSource, deploymentId: string, at: string | Date): Promise<void> {
  await ds.query(`INSERT INTO users (id, email, created_at) VALUES ('usr_a', 'a@example.com', $1)`, [at]);
  await ds.query(`INSERT INTO apps (id, slug, owner_id, created_at) VALUES ('app_1', 'alice-egg', 'usr_a', $1)`, [at]);
  await ds.query(
    `INSERT INTO deployments (id, app_id, status, url, memory_mb, created_by_id, created_at, updated_at)
     VALUES ($2, 'app_1', 'live', 'https://alice-egg--bcdefgh.hatchery.run', 256, 'usr_a', $1, $1)`,
    [at, deploymentId],
  );
}
