import { DataSource, EntityManager } from 'typeorm';

/**
 * A claim on rows that lasts until a time in a column (`*_lease_until`): builds, preview builds
 * and the eggs a gateway runs. Whoever claims a row whose lease lapsed (or was never taken) works
 * on it, renews the lease while it does, and releases it when it stops; a gateway that dies lets
 * its leases lapse and another claims the rows. Each call is one statement.
 */
export interface LeaseColumns {
  table: string;
  /** The column holding when the lease lapses. */
  until: string;
  /** The column naming the holder, when the rows say who holds them (the runner of an egg). */
  holder?: string;
  /** Which rows can be leased at all, as SQL over the table's columns (e.g. `status = 'building'`). */
  scope: string;
}

type Runner = Pick<DataSource | EntityManager, 'query'>;

export class RowLease {
  constructor(private readonly columns: LeaseColumns) {}

  /**
   * Claims the rows in scope that nobody holds (no lease, or one that lapsed before `now`) and,
   * with a holder, those it holds already; optionally only `ids`. Returns their `returning`
   * columns (default `id`).
   */
  async claim<R = { id: string }>(db: Runner, opts: { until: Date; now: Date; holder?: string; ids?: string[]; returning?: string }): Promise<R[]> {
    const { table, until, holder, scope } = this.columns;
    const params: unknown[] = [opts.until, opts.now];
    const set = holder ? `${holder} = $${params.push(opts.holder)}, ${until} = $1` : `${until} = $1`;
    const free = `${until} IS NULL OR ${until} < $2${holder ? ` OR ${holder} = $3` : ''}`;
    const only = opts.ids ? ` AND id = ANY($${params.push(opts.ids)})` : '';
    const [rows]: [R[], number] = await db.query(`UPDATE ${table} SET ${set} WHERE ${scope} AND (${free})${only} RETURNING ${opts.returning ?? 'id'}`, params);
    return rows;
  }

  /** Extends the lease of rows still in scope; a row that left it (built, deleted) is not touched. */
  async renew(db: Runner, ids: string[], until: Date): Promise<void> {
    if (ids.length === 0) return;
    const { table, until: column, scope } = this.columns;
    await db.query(`UPDATE ${table} SET ${column} = $1 WHERE id = ANY($2) AND ${scope}`, [until, ids]);
  }

  /** Lets go of these rows, or of every row the holder holds, so the next claimant needs not wait; returns their ids. */
  async release(db: Runner, which: { ids: string[] } | { holder: string }): Promise<string[]> {
    const { table, until, holder, scope } = this.columns;
    if ('ids' in which) {
      if (which.ids.length === 0) return [];
      const [rows]: [Array<{ id: string }>, number] = await db.query(`UPDATE ${table} SET ${until} = NULL WHERE id = ANY($1) AND ${scope} RETURNING id`, [
        which.ids,
      ]);
      return rows.map((r) => r.id);
    }
    if (!holder) throw new Error(`${table}: its leases name no holder`);
    const [rows]: [Array<{ id: string }>, number] = await db.query(`UPDATE ${table} SET ${holder} = NULL, ${until} = NULL WHERE ${holder} = $1 RETURNING id`, [
      which.holder,
    ]);
    return rows.map((r) => r.id);
  }
}
