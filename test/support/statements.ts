/**
 * The SQL statements a gateway runs while a test records, for tests that count them. Pass
 * `log.onQuery` as `startGateway(env, { db: { onQuery } })`.
 */
export class StatementLog {
  private recording = false;
  private readonly statements: string[] = [];

  readonly onQuery = (sql: string): void => {
    if (this.recording) this.statements.push(sql);
  };

  /** What `fn` resolved with, and the statements run while it ran. */
  async during<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    this.statements.length = 0;
    this.recording = true;
    try {
      const result = await fn();
      return { result, statements: this.statements.slice() };
    } finally {
      this.recording = false;
    }
  }
}

/** Statements of builds in progress, which run on their own timers, not for the request. */
const BACKGROUND = [
  /^\s*UPDATE "?deployments"? SET "?lease_until"?/i,
  /\bINSERT INTO "?log_lines"?/i,
  // Runner leases, and events shared with other gateways (src/bus).
  /^\s*UPDATE "?apps"? SET "?runner_id"?/i,
  /\bpg_notify\(/i,
  /\bevent_payloads\b/i,
];

/** The statements that served a request: without the background work of builds in progress. */
export const forTheRequest = (statements: string[]): string[] => statements.filter((s) => !BACKGROUND.some((re) => re.test(s)));
