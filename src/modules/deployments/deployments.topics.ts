import { LOCAL_ONLY, TopicCodec } from '../../bus/event-bus';
import { Deployment } from './deployment.entity';
import { LogLine } from './log-line.entity';
import type { OutputStream } from '../../runtime/runtime.port';

/**
 * Everything that happens to one deployment travels on one topic, so a subscriber sees log
 * lines and status changes in the order they were committed.
 */
export type DeploymentEvent =
  | { kind: 'status'; deployment: Deployment }
  /**
   * Lines just stored together (in `seq` order), to this gateway's subscribers only (see
   * `stored`). One event per deployment per flush: every subscriber gets the same array.
   */
  | { kind: 'lines'; lines: LogLine[] }
  /**
   * Lines `after < seq <= upTo` of the deployment were just stored. This, not the lines, is what
   * travels to the other gateways; each one that has subscribers on the deployment reads them
   * from storage once and hands them on as one `lines` event (see `expandStoredLines`).
   */
  | { kind: 'stored'; after: number; upTo: number }
  | { kind: 'deleted'; id: string }
  /** Events may have been missed (the bus to the other gateways was cut and is back): look at storage. */
  | { kind: 'resync' }
  /** This process only: the subscriber may have lost sight of the egg; its stream checks. */
  | { kind: 'access' };

/**
 * Between the gateways' runners of eggs: the egg's current deployment changed (or is to be
 * restarted), so whoever runs it looks again; or a stopping gateway let go of its eggs.
 */
export type RunnerEvent =
  | { kind: 'changed'; from: string; appId: string; restart: string | null }
  | { kind: 'released'; from: string }
  /** The deployment was deleted: a gateway building it stops. */
  | { kind: 'cancel'; from: string; deploymentId: string }
  /** A runtime line from elsewhere (the router, a cron run) for the egg's runner to write. */
  | { kind: 'line'; from: string; deploymentId: string; line: string; at: string; stream?: OutputStream | null };

/**
 * An egg's log lines, whichever of its deployments wrote them (for `appLogs` and drains): the
 * lines themselves in this process, `stored` (a deployment's seqs after..upTo) between gateways,
 * expanded from storage where someone listens, as for DEPLOYMENT.
 */
export type AppLogEvent =
  | { kind: 'lines'; lines: LogLine[] }
  | { kind: 'stored'; deploymentId: string; after: number; upTo: number }
  /** Lines may have been missed (the bus was cut and is back): look at storage. */
  | { kind: 'resync' };

export type DeploymentTopics = {
  DEPLOYMENT: [deploymentId: string, event: DeploymentEvent];
  APP_LOGS: [appId: string, event: AppLogEvent];
  RUNNERS: [event: RunnerEvent];
};

const DEPLOYMENT_DATES = ['createdAt', 'updatedAt', 'finishedAt', 'meteredUntil', 'leaseUntil', 'sleptAt', 'lastRequestAt', 'logsRemovedBefore'] as const;

const date = (v: unknown): Date | null => (typeof v === 'string' ? new Date(v) : null);

/** A deployment as JSON, for other gateways or for storage: without its sealed env or loaded egg. */
export function deploymentToJson(d: Deployment): Record<string, unknown> {
  const { envSealed: _sealed, app: _app, ...rest } = d;
  return rest;
}

/** The entity back from `deploymentToJson`'s JSON, with Date values (the sealed env stays out). */
export function deploymentFromJson(data: Record<string, unknown>): Deployment {
  const d = Object.assign(new Deployment(), data, { envSealed: null });
  for (const k of DEPLOYMENT_DATES) (d as unknown as Record<string, Date | null>)[k] = date(data[k]);
  return d;
}

/**
 * Deployment events as JSON for other gateways, and back into the entities (with Date values)
 * that subscribers expect. The sealed env stays in this process.
 */
export const deploymentEventCodec: TopicCodec<DeploymentEvent> = {
  encode(e) {
    if (e.kind === 'lines' || e.kind === 'access') return LOCAL_ONLY;
    if (e.kind !== 'status') return e;
    return { kind: 'status', deployment: deploymentToJson(e.deployment) };
  },
  decode(data) {
    const e = data as DeploymentEvent;
    if (e.kind === 'status') return { kind: 'status', deployment: deploymentFromJson(e.deployment as unknown as Record<string, unknown>) };
    if (e.kind === 'deleted' && typeof e.id === 'string') return { kind: 'deleted', id: e.id };
    if (e.kind === 'stored' && Number.isSafeInteger(e.after) && Number.isSafeInteger(e.upTo)) return { kind: 'stored', after: e.after, upTo: e.upTo };
    throw new Error(`deployment event of unknown kind: ${String((e as { kind?: unknown }).kind)}`);
  },
  resync: () => ({ kind: 'resync' }),
};

export const appLogEventCodec: TopicCodec<AppLogEvent> = {
  encode: (e) => (e.kind === 'stored' ? e : LOCAL_ONLY),
  decode(data) {
    const e = data as Record<string, unknown>;
    if (e?.kind === 'stored' && typeof e.deploymentId === 'string' && Number.isSafeInteger(e.after) && Number.isSafeInteger(e.upTo))
      return { kind: 'stored', deploymentId: e.deploymentId, after: e.after as number, upTo: e.upTo as number };
    throw new Error(`app log event of unknown kind: ${String(e?.kind)}`);
  },
  resync: () => ({ kind: 'resync' }),
};

export const deploymentCodecs = {
  DEPLOYMENT: deploymentEventCodec,
  APP_LOGS: appLogEventCodec,
  RUNNERS: { encode: (e: RunnerEvent) => e, decode: (d: unknown) => d as RunnerEvent } satisfies TopicCodec<RunnerEvent>,
};
