import 'reflect-metadata';
import { DataSource, Logger as OrmLogger } from 'typeorm';
import { migrations } from '../migrations';
import { GuardedClient } from './db/guarded-client';
import { fastTimestampTypes } from './db/timestamps';
import { SnakeNamingStrategy } from './db/naming';
import { entities } from './modules/entities';

export interface DataSourceOptions {
  /** Sees every SQL statement (and its parameters); tests count statements with it. */
  onQuery?: (sql: string, parameters?: unknown[]) => void;
  poolSize?: number;
  statementTimeoutMs?: number;
  /** Opening a connection, or waiting for a free one; 0: no limit (pg's default). */
  connectTimeoutMs?: number;
}

export function createDataSource(url: string, opts: DataSourceOptions = {}): DataSource {
  const logger: OrmLogger | undefined = opts.onQuery
    ? {
        logQuery: (sql, parameters) => opts.onQuery!(sql, Array.isArray(parameters) ? parameters : undefined),
        logQueryError: () => undefined,
        logQuerySlow: () => undefined,
        logSchemaBuild: () => undefined,
        logMigration: () => undefined,
        log: () => undefined,
      }
    : undefined;
  const statementTimeoutMs = opts.statementTimeoutMs ?? 30_000;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5000;
  return new DataSource({
    type: 'postgres',
    url,
    entities,
    migrations,
    namingStrategy: new SnakeNamingStrategy(),
    synchronize: false,
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    logging: opts.onQuery ? ['query'] : false,
    logger,
    extra: {
      // Timestamps read by position, not pg's regular expressions (the lists read a dozen a row).
      types: fastTimestampTypes,
      max: opts.poolSize ?? 10,
      statement_timeout: statementTimeoutMs,
      connectionTimeoutMillis: connectTimeoutMs,
      // The server ends a statement at statement_timeout; a server that does not answer at all is
      // given up a connect timeout later (GuardedClient closes the connection).
      replyTimeoutMs: statementTimeoutMs > 0 ? statementTimeoutMs + connectTimeoutMs : 0,
      Client: GuardedClient,
    },
  });
}
