/**
 * The benchmarks' database, gateway settings and rows: a fresh database on DATABASE_URL's server
 * (else an embedded PostgreSQL), what every benchmark's gateway runs with, and the deployments and
 * eggs they seed (bench/run.ts, bench/inproc.ts).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres, startEmbeddedPostgres } from '../src/db/embedded';
import { newId } from '../src/ids';
import { App, Tier } from '../src/modules/apps/app.entity';
import { Deployment, DeploymentStatus } from '../src/modules/deployments/deployment.entity';

// Database: a fresh one on DATABASE_URL's server, else an embedded PostgreSQL in a temp dir.

export interface BenchDb {
  url: string;
  where: string;
  drop(): Promise<void>;
}

export async function openBenchDb(tmp: string): Promise<BenchDb> {
  const server = process.env.DATABASE_URL;
  if (server) {
    const name = `hatchery_bench_${randomBytes(5).toString('hex')}`;
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(server);
    u.pathname = `/${name}`;
    return {
      url: u.toString(),
      where: `PostgreSQL at ${u.host} (DATABASE_URL), fresh database ${name}`,
      async drop() {
        const c = new Client({ connectionString: server });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres(path.join(tmp, 'db'));
  return { url: embedded.url, where: `embedded PostgreSQL in ${tmp}`, drop: () => embedded.stop() };
}

/**
 * The settings every benchmark's gateway starts with (a phase adds or overrides its own): its own
 * ports and data directory on `db`, no job queue and no cron ticks, no runtime lines on a timer,
 * rate limits far above what one benchmark token sends.
 */
export function benchGatewayEnv(db: BenchDb, tmp: string): Record<string, string> {
  return {
    HATCHERY_ROUTER_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    HATCHERY_DATA_DIR: path.join(tmp, 'data'),
    HATCHERY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    HATCHERY_JOBS: 'off',
    HATCHERY_CRON_TICK_MS: '0',
    HATCHERY_SIM_RUNTIME_LOG_MS: '3600000',
    HATCHERY_RATE_LIMIT_PER_MIN: '100000000',
    HATCHERY_RATE_LIMIT_ANON_PER_MIN: '100000000',
  };
}

export function deploymentRow(appId: string, userId: string, at: Date, slug: string): Deployment {
  const id = newId('dep', at);
  return Object.assign(new Deployment(), {
    id,
    appId,
    status: DeploymentStatus.LIVE,
    revision: 2,
    url: `https://${slug}-${id.slice(-8)}.hatchery.run`,
    envSealed: null,
    envKeys: ['PORT', 'NODE_ENV'],
    memoryMb: 256,
    volumeMb: null,
    failureReason: null,
    createdById: userId,
    meteredUntil: null,
    leaseUntil: null,
    createdAt: at,
    updatedAt: at,
    finishedAt: at,
  });
}

export function appRow(ownerId: string, slug: string, at: Date): App {
  return Object.assign(new App(), { id: newId('app', at), slug, ownerId, tier: Tier.FREE, memoryMb: null, currentDeploymentId: null, createdAt: at });
}
