import { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';

/** Column types whose value pg already gives in the entity's shape (TypeORM passes them through). */
const PLAIN_TYPES = new Set(['text', 'integer', 'boolean', 'timestamptz', 'jsonb']);

/**
 * Hand-written SQL for the hottest reads (lists and their loaders), hydrated into the same entity
 * classes TypeORM makes: the column list and the row → entity mapping come from TypeORM's
 * metadata, worked out once. Building and hydrating through the query builder cost about as much
 * as running the statement, per request.
 *
 * Only for entities of plain columns (the types above, no embeddeds, no transformers): anything
 * else fails at construction, so a schema change cannot make it hydrate differently unnoticed.
 */
export class EntityRows<T extends ObjectLiteral> {
  /** `alias."column"` for every column, for a SELECT list. */
  readonly select: string;
  /** Each column's key in a row (`<as><column>`) and its property, in the entity's column order. */
  private readonly fields: Array<[key: string, property: string]>;
  private readonly create: () => T;

  constructor(
    ds: DataSource,
    target: EntityTarget<T>,
    readonly alias: string,
    /** Names each selected column `<as><column>`: another table's columns joined in, apart from the main one's. */
    as = '',
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
    this.fields = columns.map(([column, property]) => [as + column, property]);
    this.select = columns.map(([column]) => (as ? `${alias}."${column}" AS "${as}${column}"` : `${alias}."${column}"`)).join(', ');
    this.create = () => meta.create(undefined, { fromDeserializer: true }) as T;
  }

  /** One entity from a row selected with `select`. */
  map(row: Record<string, unknown>): T {
    const entity = this.create() as Record<string, unknown>;
    const fields = this.fields;
    for (let i = 0; i < fields.length; i++) {
      const value = row[fields[i][0]];
      if (value !== undefined) entity[fields[i][1]] = value;
    }
    return entity as T;
  }

  async query(ds: DataSource, sql: string, params: unknown[]): Promise<T[]> {
    const rows: Array<Record<string, unknown>> = await ds.query(sql, params);
    return rows.map((row) => this.map(row));
  }
}

const cache = new WeakMap<DataSource, Map<unknown, EntityRows<ObjectLiteral>>>();

/** The `EntityRows` of `target` on `ds` with `alias` (and `as`, see the class), worked out on first use. */
export function entityRows<T extends ObjectLiteral>(ds: DataSource, target: EntityTarget<T>, alias: string, as = ''): EntityRows<T> {
  let byTarget = cache.get(ds);
  if (!byTarget) cache.set(ds, (byTarget = new Map<unknown, EntityRows<ObjectLiteral>>()));
  // Our callers pass entity classes (or their names); anything else would share one key.
  const key = `${alias}:${as}:${typeof target === 'function' ? target.name : typeof target === 'string' ? target : 'entity'}`;
  let rows = byTarget.get(key);
  if (!rows) byTarget.set(key, (rows = new EntityRows(ds, target, alias, as) as unknown as EntityRows<ObjectLiteral>));
  return rows as unknown as EntityRows<T>;
}
