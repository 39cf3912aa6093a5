import { DataSource, EntityManager } from 'typeorm';

export type AfterCommit = (effect: () => void | Promise<void>) => void;

/**
 * Runs `work` in one transaction. Effects registered with `afterCommit` (publishing events,
 * waking workers) run only once the transaction has committed, so nobody sees an event for a
 * change that rolled back.
 */
export async function inTransaction<T>(ds: DataSource, work: (tx: EntityManager, afterCommit: AfterCommit) => Promise<T>): Promise<T> {
  const effects: Array<() => void | Promise<void>> = [];
  const result = await ds.transaction((tx) => work(tx, (effect) => effects.push(effect)));
  for (const effect of effects) await effect();
  return result;
}

/** PostgreSQL's SQLSTATE for the error, if it is a driver error. */
export function pgCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const code = e?.driverError?.code ?? e?.code;
  return typeof code === 'string' ? code : undefined;
}
