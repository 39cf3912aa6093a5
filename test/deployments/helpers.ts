import { DeploymentFieldsFragment, DeploymentLogStreamDocument, DeploymentLogStreamSubscription, LogType } from '../../src/client/generated';
import { collect, Collected, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { TestUser } from '../support/factories';

export type StreamItem = DeploymentLogStreamSubscription;
export type LogStream = Collected<StreamItem>;

/** A GraphQL deployment as the REST body GET /deployments/:id should be (snake_case, lower-case enums). */
export function restDeployment(d: DeploymentFieldsFragment) {
  return {
    id: d.id,
    project: d.app.slug,
    status: d.status.toLowerCase(),
    url: d.url,
    created_at: d.createdAt,
    updated_at: d.updatedAt,
    finished_at: d.finishedAt,
    memory_mb: d.memoryMb,
    volume_mb: d.volumeMb,
    env_keys: d.envKeys,
    source: d.source,
    image: d.image,
    failure_reason: d.failureReason,
  };
}

export function restLogLine(l: { timestamp: string; type: LogType; message: string }) {
  return { timestamp: l.timestamp, type: l.type.toLowerCase(), message: l.message };
}

/** A Relay connection as the REST list wrapper. */
export function restList<N, R>(c: { nodes: N[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }, map: (n: N) => R) {
  return {
    data: c.nodes.map(map),
    has_more: c.pageInfo.hasNextPage,
    next_cursor: c.pageInfo.hasNextPage ? c.pageInfo.endCursor : null,
  };
}

/** Resolves with the items received so far once one of them matches; bounded by jest's timeout. */
export { waitForItem };

/**
 * Waits, over graphql-ws, until the deployment's runtime has written "Listening on port 8080"
 * (the simulated runtime's go-live lines are stored by then). Returns every line streamed.
 */
export async function untilListening(url: string, user: TestUser, id: string): Promise<StreamItem['deploymentLogs'][]> {
  const client = wsClient(url, user.token);
  try {
    const stream = collect(client, DeploymentLogStreamDocument, { id });
    const items = await waitForItem(stream, (i) => i.deploymentLogs.message === 'Listening on port 8080');
    stream.unsubscribe();
    return items.map((i) => i.deploymentLogs);
  } finally {
    await client.dispose();
  }
}

export { ISO_MS } from '../support/factories';

/** The deployment's stored log lines (of one type, if given), in seq order. */
export async function storedLines(t: TestGateway, id: string, type?: string): Promise<Array<{ seq: number; message: string }>> {
  return t.gateway.ds.query(
    `SELECT seq, message FROM log_lines WHERE deployment_id = $1 ${type ? 'AND type = $2' : ''} ORDER BY seq`,
    type ? [id, type] : [id],
  );
}
