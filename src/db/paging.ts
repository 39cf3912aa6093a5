import { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { ValidationFailed } from '../errors';
import { IdPrefix, isId } from '../ids';
import { EntityRows, readArrays } from './rows';
import { prepared } from './guarded-client';

/**
 * Forward paging over lists, newest first, with opaque cursors: what services return, whatever
 * transport shows it (GraphQL connections, REST `{data, has_more, next_cursor}`).
 */

/** Where a page sits in its list (GraphQL's PageInfo has these fields). */
export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export interface Edge<T> {
  node: T;
  cursor: string;
}

export interface Page<T> {
  edges: Edge<T>[];
  nodes: T[];
  pageInfo: PageInfo;
}

export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

export function pageSize(first: number | null | undefined, max = MAX_PAGE, fallback = DEFAULT_PAGE): number {
  if (first === null || first === undefined) return fallback;
  if (!Number.isInteger(first) || first < 1 || first > max) {
    throw ValidationFailed.field('first', `must be an integer from 1 to ${max}`);
  }
  return first;
}

export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** PostgreSQL `integer`: the largest value an integer-keyed cursor may name. */
export const PG_INT_MAX = 2_147_483_647;

/** A `<name>:<n>` cursor key over an integer column: `n` canonical (no sign, no leading zero) and at most `max`. */
export function isIntKey(key: string, name: string, max = PG_INT_MAX): boolean {
  const m = /^([a-z]+):(0|[1-9]\d{0,9})$/.exec(key);
  return m !== null && m[1] === name && Number(m[2]) <= max;
}

/** Decodes a cursor and checks it with `valid`; a foreign or mangled cursor is a 422 on `after`. */
export function decodeCursor(cursor: string | null | undefined, valid: (key: string) => boolean): string | null {
  if (cursor === null || cursor === undefined) return null;
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!valid(key) || encodeCursor(key) !== cursor) throw ValidationFailed.field('after', 'is not a cursor from this list');
  return key;
}

/** Turns `limit + 1` fetched rows into a page. */
export function toPage<T>(rows: T[], limit: number, key: (row: T) => string): Page<T> {
  const nodes = rows.slice(0, limit);
  const edges = nodes.map((node) => ({ node, cursor: encodeCursor(key(node)) }));
  return {
    edges,
    nodes,
    pageInfo: {
      hasNextPage: rows.length > limit,
      hasPreviousPage: false,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

/** Newest-first paging over time-sortable ids: the shared shape of every id-keyed list. */
export async function pageByIdDesc<T extends { id: string }>(
  qb: SelectQueryBuilder<T>,
  prefix: IdPrefix,
  args: { first?: number | null; after?: string | null },
): Promise<Page<T>> {
  const limit = pageSize(args.first);
  const after = decodeCursor(args.after, (k) => isId(k, prefix));
  qb.orderBy(`${qb.alias}.id`, 'DESC').limit(limit + 1);
  if (after) qb.andWhere(`${qb.alias}.id < :after`, { after });
  return toPage(await qb.getMany(), limit, (row) => row.id);
}

/** Another table's row read with each row of a list (`join` names it), handed to `each` with it: one statement, not two. */
export interface JoinedRows<U extends ObjectLiteral, T extends ObjectLiteral = ObjectLiteral> {
  rows: EntityRows<U>;
  join: string;
  each: (joined: U, row: T) => void;
}

/** Statement texts by their rows, joined rows and shape: the same string each time (pg names it by text). */
const texts = new WeakMap<EntityRows<ObjectLiteral>, Map<EntityRows<ObjectLiteral> | null, Map<string, string>>>();

/** The text `make` builds for this shape, built once: a list's statement is a long string, looked up by text on every run. */
function statementText(rows: EntityRows<ObjectLiteral>, joined: EntityRows<ObjectLiteral> | null, shape: string, make: () => string): string {
  let byJoined = texts.get(rows);
  if (!byJoined) texts.set(rows, (byJoined = new Map<EntityRows<ObjectLiteral> | null, Map<string, string>>()));
  let byShape = byJoined.get(joined);
  if (!byShape) byJoined.set(joined, (byShape = new Map<string, string>()));
  let text = byShape.get(shape);
  if (text === undefined) byShape.set(shape, (text = make()));
  return text;
}

/**
 * `pageByIdDesc` in hand-written SQL, for the hottest lists: `FROM` and `WHERE` (ANDed, with
 * `$n` placeholders numbered after `params`) as given; the cursor and the limit are added here.
 * Their texts never carry a value (each shape's statement is kept, as a prepared statement is).
 */
export async function pageByIdDescSql<T extends ObjectLiteral & { id: string }, U extends ObjectLiteral = ObjectLiteral>(
  ds: DataSource,
  rows: EntityRows<T>,
  prefix: IdPrefix,
  query: { from: string; where: string[]; params: unknown[]; joined?: JoinedRows<U, T> | null },
  args: { first?: number | null; after?: string | null },
): Promise<Page<T>> {
  const limit = pageSize(args.first);
  const after = decodeCursor(args.after, (k) => isId(k, prefix));
  const params = [...query.params];
  const where = [...query.where];
  if (after) where.push(`${rows.alias}.id < $${params.push(after)}`);
  const joined = query.joined;
  // Prepared: the text varies with which filters are set, not with their values or the limit.
  const whereText = where.join(' AND ');
  const limitParam = params.push(limit + 1);
  const sql = statementText(rows, joined?.rows ?? null, `${query.from}\u0000${joined ? joined.join : ''}\u0000${whereText}\u0000${limitParam}`, () =>
    prepared(`SELECT ${rows.select}${joined ? `, ${joined.rows.select}` : ''} FROM ${query.from}${joined ? ` ${joined.join}` : ''}${
      where.length ? ` WHERE ${whereText}` : ''
    }
    ORDER BY ${rows.alias}.id DESC LIMIT $${limitParam}`),
  );
  const found = await readArrays(ds, sql, params);
  const width = rows.width;
  return toPage(
    found.map((row) => {
      const item = rows.map(row);
      joined?.each(joined.rows.map(row, width), item);
      return item;
    }),
    limit,
    (row) => row.id,
  );
}
