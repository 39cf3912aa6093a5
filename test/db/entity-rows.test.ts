import 'reflect-metadata';
import { EntityTarget, ObjectLiteral } from 'typeorm';
import { EntityRows, entityRows } from '../../src/db/rows';
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

  it('is the same object for the same entity and alias on one DataSource', () => {
    expect(entityRows(t.gateway.ds, Deployment, 'd')).toBe(entityRows(t.gateway.ds, Deployment, 'd'));
    expect(entityRows(t.gateway.ds, Deployment, 'e')).not.toBe(entityRows(t.gateway.ds, Deployment, 'd'));
    expect(entityRows(t.gateway.ds, Deployment, 'e').select).toMatch(/^e\."id", /);
  });
});
