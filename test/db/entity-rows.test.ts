import 'reflect-metadata';
import { EntityTarget, ObjectLiteral } from 'typeorm';
import { EntityRows, entityRows, readArrays } from '../../src/db/rows';
import { prepared } from '../../src/db/guarded-client';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { Pool } from 'pg';
import { entities } from '../../src/modules';
import { App } from '../../src/modules/apps/app.entity';
import { User } from '../../src/modules/accounts/user.entity';
import { Deployment, DeploymentStatus } from '../../src/modules/deployments/deployment.entity';
import { newId } from '../../src/ids';
import { furnish } from '../faults/helpers';
import { startGateway, TestGateway } from '../support/gateway';

/**
 * EntityRows (src/db/rows.ts) hydrates hand-written SELECTs into entities for the hot lists and
 * loaders. Whatever it accepts must give exactly what TypeORM gives for the same rows: the same
 * class, the same properties, the same values and types, nulls included.
 */
describe('EntityRows hydrates like TypeORM', () => {
  let t: TestGateway;

  beforeAll(async () => {
    t = await startGateway();
    const { slug } = await furnish(t);
    // Every nullable deployment column set, and every one null, beside the gateway's own rows.
    const [app] = await t.gateway.ds.query('SELECT id, owner_id FROM apps WHERE slug = $1', [slug]);
    const now = new Date('2026-11-21T10:11:12.345Z');
    const base = { appId: app.id, url: 'https://x.invalid', envKeys: [], memoryMb: 512, createdById: app.owner_id, createdAt: now, updatedAt: now };
    await t.gateway.ds.getRepository(Deployment).insert([
      {
        ...base,
        id: newId('dep'),
        status: DeploymentStatus.FAILED,
        failureReason: 'no',
        volumeMb: 100,
        finishedAt: now,
        envKeys: ['A', 'B'],
        envSealed: 'sealed',
        meteredUntil: now,
        leaseUntil: now,
      },
      {
        ...base,
        id: newId('dep'),
        status: DeploymentStatus.BUILDING,
        failureReason: null,
        volumeMb: null,
        finishedAt: null,
        envSealed: null,
        meteredUntil: null,
        leaseUntil: null,
      },
    ] as never);
  });
  afterAll(() => t.stop());

  const accepted = (target: EntityTarget<ObjectLiteral>): EntityRows<ObjectLiteral> | Error => {
    try {
      return new EntityRows(t.gateway.ds, target, 'x');
    } catch (err) {
      return err as Error;
    }
  };

  it('accepts the entities it is used for', () => {
    for (const target of [Deployment, App, User]) expect(accepted(target)).toBeInstanceOf(EntityRows);
  });

  it('for every entity it accepts, every stored row equals what the repository reads', async () => {
    const compared: string[] = [];
    for (const target of entities) {
      const rows = accepted(target);
      if (rows instanceof Error) {
        expect(rows.message).toMatch(/is not a plain column|has embedded columns/);
        continue;
      }
      const meta = t.gateway.ds.getMetadata(target);
      const byOrm = await t.gateway.ds.getRepository(target).find({ order: Object.fromEntries(meta.primaryColumns.map((c) => [c.propertyName, 'ASC'])) });
      const order = meta.primaryColumns.map((c) => `x."${c.databaseName}"`).join(', ');
      const byHand = await rows.query(t.gateway.ds, `SELECT ${rows.select} FROM "${meta.tableName}" x ORDER BY ${order}`, []);
      expect(byHand).toHaveLength(byOrm.length);
      for (let i = 0; i < byOrm.length; i++) {
        expect(Object.getPrototypeOf(byHand[i])).toBe(Object.getPrototypeOf(byOrm[i]));
        expect(byHand[i]).toStrictEqual(byOrm[i]);
      }
      if (byOrm.length) compared.push(meta.name);
    }
    expect(compared).toEqual(expect.arrayContaining(['Deployment', 'App', 'User']));
  });

  it('the null-and-set deployment rows come back with their nulls and values', async () => {
    const rows = entityRows(t.gateway.ds, Deployment, 'd');
    const got = await rows.query(t.gateway.ds, `SELECT ${rows.select} FROM deployments d WHERE d.url = 'https://x.invalid' ORDER BY d.id`, []);
    expect(got.map((d) => [d.status, d.failureReason, d.volumeMb, d.finishedAt, d.envKeys])).toEqual([
      ['failed', 'no', 100, new Date('2026-11-21T10:11:12.345Z'), ['A', 'B']],
      ['building', null, null, null, []],
    ]);
    expect(got[0]).toBeInstanceOf(Deployment);
  });

  it("reads an entity from an offset in a row (a joined table's columns after the main one's)", async () => {
    const users = entityRows(t.gateway.ds, User, 'u');
    const [row] = await readArrays(t.gateway.ds, `SELECT 'first', 2, ${users.select} FROM users u ORDER BY u.id LIMIT 1`, []);
    expect(row.slice(0, 2)).toEqual(['first', 2]);
    const user = users.map(row, 2);
    expect(user).toBeInstanceOf(User);
    expect(user).toEqual(await t.gateway.ds.getRepository(User).findOneByOrFail({ id: user.id }));
  });

  describe('readArrays', () => {
    const pool = () => (t.gateway.ds.driver as PostgresDriver).master as Pool;

    it('runs a prepared statement as one, named, on the connection it ran on', async () => {
      const sql = prepared(`SELECT 'readArrays test' AS marker, $1::int + 1 AS next`);
      expect(await readArrays(t.gateway.ds, sql, [41])).toEqual([['readArrays test', 42]]);
      // On whichever connection the pool hands out: run it on every one, then ask each.
      const clients = await Promise.all(Array.from({ length: pool().options.max }, () => pool().connect()));
      try {
        const named = await Promise.all(
          clients.map(async (c) => (await c.query(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%readArrays test%'`)).rows[0].n),
        );
        expect(named.some((n) => n === 1)).toBe(true);
      } finally {
        for (const c of clients) c.release();
      }
    });

    it('drops a connection that broke, and the next read gets a working one', async () => {
      const [[pid]] = await readArrays(t.gateway.ds, 'SELECT pg_backend_pid()', []);
      // Ends its own connection: the statement fails as any read fails when the database goes away.
      await expect(readArrays(t.gateway.ds, 'SELECT pg_terminate_backend(pg_backend_pid())', [])).rejects.toMatchObject({ code: '57P01' });
      for (let i = 0; i < pool().options.max; i++) {
        const [[again]] = await readArrays(t.gateway.ds, 'SELECT pg_backend_pid()', []);
        expect(typeof again).toBe('number');
      }
      expect(pid).toEqual(expect.any(Number));
    });

    it("fails a statement with the database's error, and the connection goes back to the pool", async () => {
      const idle = pool().idleCount + pool().waitingCount;
      await expect(readArrays(t.gateway.ds, 'SELECT no_such_column FROM users', [])).rejects.toMatchObject({ code: '42703' });
      expect(pool().totalCount).toBeGreaterThan(0);
      expect(pool().idleCount + pool().waitingCount).toBeGreaterThanOrEqual(idle);
    });
  });

  it('is the same object for the same entity and alias on one DataSource', () => {
    expect(entityRows(t.gateway.ds, Deployment, 'd')).toBe(entityRows(t.gateway.ds, Deployment, 'd'));
    expect(entityRows(t.gateway.ds, Deployment, 'e')).not.toBe(entityRows(t.gateway.ds, Deployment, 'd'));
    expect(entityRows(t.gateway.ds, Deployment, 'e').select).toMatch(/^e\."id", /);
  });
});
