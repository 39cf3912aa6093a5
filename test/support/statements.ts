import { requestScope } from '../../src/log';

/**
 * The SQL statements a gateway runs while a test records, for tests that count them. Pass
 * `log.onQuery` as `startGateway(env, { db: { onQuery } })`.
 *
 * Each statement is recorded with the HTTP request it served (the request scope it ran in), so a
 * test can tell the statements of the request it measures from work on timers: builds in
 * progress, runners reconciling, writers flushing. Timers started while serving an earlier request
 * run in that request's scope; timers started by the gateway itself run in none.
 */
export class StatementLog {
  private recording = false;
  private readonly statements: Array<{ sql: string; reqId?: string }> = [];
  /** Requests seen before the current recording began: their statements now are background work. */
  private readonly earlier = new Set<string>();

  readonly onQuery = (sql: string): void => {
    const reqId = requestScope.getStore()?.reqId;
    if (this.recording) this.statements.push({ sql, reqId });
    else if (reqId) this.earlier.add(reqId);
  };

  /**
   * What `fn` resolved with, the statements run while it ran (`statements`, background work
   * included) and those that served requests begun while it ran (`served`).
   */
  async during<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[]; served: string[] }> {
    this.statements.length = 0;
    this.recording = true;
    try {
      const result = await fn();
      const recorded = this.statements.slice();
      return {
        result,
        statements: recorded.map((s) => s.sql),
        served: recorded.filter((s) => s.reqId !== undefined && !this.earlier.has(s.reqId)).map((s) => s.sql),
      };
    } finally {
      this.recording = false;
      for (const s of this.statements) if (s.reqId) this.earlier.add(s.reqId);
    }
  }
}
