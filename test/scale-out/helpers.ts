import { buildApp, Gateway } from '../../src/app';
import { DeploymentLogStreamSubscription } from '../../src/client/generated';
import { Collected, startGateway, TestGateway } from '../support/gateway';

/** Two gateways on one database, as behind a load balancer: `a` is the test gateway, `b` a second one. */
export interface Pair {
  t: TestGateway;
  a: Gateway;
  b: Gateway;
  aUrl: string;
  bUrl: string;
  /** Every SQL statement gateway `b` has run, with its parameters. */
  bStatements: Array<{ sql: string; parameters: unknown[] }>;
  /** Another gateway on the same database (the test stops it; `stop` stops it too). */
  another(): Promise<{ gateway: Gateway; url: string }>;
  stop(): Promise<void>;
}

export async function startPair(env: Record<string, string> = {}): Promise<Pair> {
  const t = await startGateway(env);
  const extra: Gateway[] = [];
  const bStatements: Array<{ sql: string; parameters: unknown[] }> = [];
  const another = async (onQuery?: (sql: string, parameters?: unknown[]) => void) => {
    const gateway = buildApp(t.config, onQuery ? { db: { onQuery } } : {});
    extra.push(gateway);
    return { gateway, url: await gateway.start(0) };
  };
  const second = await another((sql, parameters) => bStatements.push({ sql, parameters: parameters ?? [] }));
  return {
    t,
    a: t.gateway,
    b: second.gateway,
    aUrl: t.url,
    bUrl: second.url,
    bStatements,
    another: () => another(),
    async stop() {
      for (const g of extra) await g.stop();
      await t.stop();
    },
  };
}

export type LogItem = DeploymentLogStreamSubscription['deploymentLogs'];

export const seqsOf = (s: Collected<DeploymentLogStreamSubscription>) => s.items.map((i) => i.deploymentLogs.seq);

export { waitForItem } from '../support/gateway';
