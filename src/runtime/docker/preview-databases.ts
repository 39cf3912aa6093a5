import { createHmac } from 'node:crypto';
import { Client } from 'pg';

/**
 * A PostgreSQL database per preview, on the preview server (`HATCHERY_PREVIEW_DATABASE_URL`,
 * default the gateway's own): its own login role owning it, no one else allowed to connect, so
 * a preview's app reaches its own data and no other's. The role's password is derived from a
 * secret and the preview's id, so nothing needs storing to hand it to the preview later.
 */
export class PreviewDatabases {
  constructor(
    private readonly serverUrl: string,
    private readonly secret: Buffer,
  ) {}

  /** The database's and its role's name: from the preview id, lower-case letters, digits and `_` only. */
  static nameOf(previewId: string): string {
    const name = `hatchery_${previewId.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`;
    if (!/^[a-z_][a-z0-9_]{1,62}$/.test(name)) throw new Error(`no database name can be made from ${previewId}`);
    return name;
  }

  /** The server the preview's relay connects to. */
  get server(): { host: string; port: number } {
    const u = new URL(this.serverUrl);
    return { host: u.hostname || '127.0.0.1', port: Number(u.port || 5432) };
  }

  passwordOf(previewId: string): string {
    return createHmac('sha256', this.secret).update(`preview-database:${previewId}`).digest('hex');
  }

  /** The URL the preview's app connects with. */
  urlOf(previewId: string): string {
    const url = new URL(this.serverUrl);
    url.username = PreviewDatabases.nameOf(previewId);
    url.password = this.passwordOf(previewId);
    url.pathname = `/${PreviewDatabases.nameOf(previewId)}`;
    return url.toString();
  }

  /** Creates the role and its database (again after a crash half-way: what exists is kept); returns the name. */
  async create(previewId: string): Promise<string> {
    const name = PreviewDatabases.nameOf(previewId);
    const password = this.passwordOf(previewId);
    await this.withClient(async (c) => {
      const role = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
      // Names and the hex password are checked characters only: safe to write into the statements.
      if (role.rowCount === 0) await c.query(`CREATE ROLE "${name}" LOGIN PASSWORD '${password}'`);
      const db = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (db.rowCount === 0) await c.query(`CREATE DATABASE "${name}" OWNER "${name}"`);
      await c.query(`REVOKE ALL ON DATABASE "${name}" FROM PUBLIC`);
    });
    return name;
  }

  /** Drops the database (closing its connections) and its role; what is gone already is not an error. */
  async drop(name: string): Promise<void> {
    if (!/^hatchery_[a-z0-9_]{1,53}$/.test(name)) throw new Error(`not a preview database: ${name}`);
    await this.withClient(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.query(`DROP ROLE IF EXISTS "${name}"`);
    });
  }

  private async withClient<T>(work: (c: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: this.serverUrl, connectionTimeoutMillis: 10_000 });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }
}
