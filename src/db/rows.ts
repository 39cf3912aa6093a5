import type { Pool, PoolClient, QueryArrayConfig } from 'pg';
import { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { isDatabaseUnavailable } from './errors';
import { nameOf, PREPARED } from './guarded-client';

/** Column types whose value pg already gives in the entity's shape (TypeORM passes them through). */
const PLAIN_TYPES = new Set(['text', 'integer', 'boolean', 'timestamptz', 'jsonb']);

/**
 * Hand-written SQL for the hottest reads (lists and their loaders), hydrated into the same entity
 * classes TypeORM makes: the column list and the row → entity mapping come from TypeORM's
 * metadata, worked out once; rows are read as arrays (`readArrays`). Building and hydrating
 * through the query builder cost about as much as running the statement, per request.
 *
 * Only for entities of plain columns (the types above, no embeddeds, no transformers): anything
 * else fails at construction, so a schema change cannot make it hydrate differently unnoticed.
 */
export class EntityRows<T extends ObjectLiteral> {
  /** `alias."column"` for every column, for a SELECT list. */
  readonly select: string;
  /** The entity's properties in the order of `select`'s columns. */
  private readonly properties: string[];
  /** How many columns `select` names. */
  readonly width: number;
  private readonly create: () => T;

  constructor(
    ds: DataSource,
    target: EntityTarget<T>,
    readonly alias: string,
  ) {
    const meta = ds.getMetadata(target);
    if (meta.embeddeds.length) throw new Error(`EntityRows: ${meta.name} has embedded columns`);
    const columns = meta.columns.map((c) => {
      const type = typeof c.type === 'string' ? c.type : '';
      if (c.transformer || c.embeddedMetadata || c.isVirtual || !PLAIN_TYPES.has(type)) {
        throw new Error(`EntityRows: ${meta.name}.${c.propertyName} (${String(type || c.type)}) is not a plain column`);
      }
      return [c.databaseName, c.propertyName] as [string, string];
    });
    this.properties = columns.map(([, property]) => property);
    this.width = columns.length;
    this.select = columns.map(([column]) => `${alias}."${column}"`).join(', ');
    this.create = () => meta.create(undefined, { fromDeserializer: true }) as T;
  }

  /** One entity from a row read as an array (`readArrays`), `select`'s columns from index `at` on. */
  map(row: unknown[], at = 0): T {
    const entity = this.create() as Record<string, unknown>;
    const properties = this.properties;
    for (let i = 0; i < properties.length; i++) entity[properties[i]] = row[at + i];
    return entity as T;
  }

  /** The entities of a statement that selects `select` and nothing else. */
  async query(ds: DataSource, sql: string, params: unknown[]): Promise<T[]> {
    const rows = await readArrays(ds, sql, params);
    return rows.map((row) => this.map(row));
  }
}

const cache = new WeakMap<DataSource, Map<unknown, EntityRows<ObjectLiteral>>>();

/** The `EntityRows` of `target` on `ds` with `alias`, worked out on first use. */
export function entityRows<T extends ObjectLiteral>(ds: DataSource, target: EntityTarget<T>, alias: string): EntityRows<T> {
  let byTarget = cache.get(ds);
  if (!byTarget) cache.set(ds, (byTarget = new Map<unknown, EntityRows<ObjectLiteral>>()));
  // Our callers pass entity classes (or their names); anything else would share one key.
  const key = `${alias}:${typeof target === 'function' ? target.name : typeof target === 'string' ? target : 'entity'}`;
  let rows = byTarget.get(key);
  if (!rows) byTarget.set(key, (rows = new EntityRows(ds, target, alias) as unknown as EntityRows<ObjectLiteral>));
  return rows as unknown as EntityRows<T>;
}

/**
 * A SELECT's rows as arrays of their columns, read on a connection of `ds`'s pool without
 * TypeORM's query runner: for the hottest reads, where pg's row objects (the columns' names
 * spread into a new object for every row) and the runner's awaited events cost more than
 * hydrating the entities (without them a list request spends 14 % less CPU, docs/benchmarks.md).
 * A `prepared` statement runs as one. The statement is logged as TypeORM logs it; a connection
 * that broke is dropped, not handed to the next caller.
 */
export async function readArrays(ds: DataSource, sql: string, params: unknown[]): Promise<unknown[][]> {
  ds.logger.logQuery(sql, params);
  const pool = (ds.driver as PostgresDriver).master as Pool;
  const client: PoolClient = await pool.connect();
  let broken: Error | undefined;
  try {
    const query: QueryArrayConfig = { text: sql, values: params, rowMode: 'array' };
    if (sql.startsWith(PREPARED)) query.name = nameOf(sql);
    return (await client.query<unknown[]>(query)).rows;
  } catch (err) {
    if (isDatabaseUnavailable(err)) broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}
