/** GraphQL results → the REST shapes of the service document (snake_case, lower-case enums). */

type Data = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const lower = (v: string | null | undefined) => (typeof v === 'string' ? v.toLowerCase() : v);
const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v ?? null));

export const DEPLOYMENT_FIELDS = /* GraphQL */ `
  fragment RestDeployment on Deployment {
    id status url createdAt updatedAt finishedAt memoryMb volumeMb envKeys failureReason
    app { slug }
  }
`;

export function deployment(d: Data) {
  return {
    id: d.id,
    project: d.app.slug,
    status: lower(d.status),
    url: d.url,
    created_at: iso(d.createdAt),
    updated_at: iso(d.updatedAt),
    finished_at: iso(d.finishedAt),
    memory_mb: d.memoryMb,
    volume_mb: d.volumeMb,
    env_keys: d.envKeys,
    failure_reason: d.failureReason,
  };
}

/** A Relay connection as a REST list: `{data, has_more, next_cursor}`. */
export function list<T>(connection: Data, item: (node: Data) => T) {
  return {
    data: (connection.nodes as Data[]).map(item),
    has_more: connection.pageInfo.hasNextPage,
    next_cursor: connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null,
  };
}

export function logLine(l: Data) {
  return { timestamp: iso(l.timestamp), type: lower(l.type), message: l.message };
}

export function resources(a: Data) {
  return { slug: a.slug, memory_mb: a.memoryMb, effective_memory_mb: a.effectiveMemoryMb, cap_mb: a.capMb };
}

export const VOLUME_FIELDS = /* GraphQL */ `
  fragment RestVolume on Volume { sizeMb usedMb status mount overQuota createdAt eraseAt }
`;

export function volume(v: Data) {
  return {
    size_mb: v.sizeMb,
    used_mb: v.usedMb,
    status: lower(v.status),
    mount: v.mount,
    over_quota: v.overQuota,
    created_at: iso(v.createdAt),
    erase_at: iso(v.eraseAt),
  };
}

export const PREVIEW_FIELDS = /* GraphQL */ `
  fragment RestPreview on Preview { slug prNumber url status expiresAt createdAt }
`;

export function preview(p: Data) {
  return { slug: p.slug, pr_number: p.prNumber, url: p.url, status: lower(p.status), expires_at: iso(p.expiresAt), created_at: iso(p.createdAt) };
}

export function checkout(c: Data) {
  return { checkout_url: c.checkoutUrl, session_id: c.sessionId, expires_at: iso(c.expiresAt) };
}

export const CRON_RUN_FIELDS = /* GraphQL */ `
  fragment RestCronRun on CronRun { id status exitCode scheduledAt startedAt finishedAt }
`;

export function cronRun(r: Data | null) {
  if (!r) return null;
  return {
    id: r.id,
    status: lower(r.status),
    exit_code: r.exitCode,
    scheduled_at: iso(r.scheduledAt),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
  };
}

export const CRON_FIELDS = /* GraphQL */ `
  fragment RestCron on Cron { id schedule command enabled createdAt nextRunAt lastRun { ...RestCronRun } }
  ${CRON_RUN_FIELDS}
`;

export function cron(c: Data) {
  return {
    id: c.id,
    schedule: c.schedule,
    command: c.command,
    enabled: c.enabled,
    created_at: iso(c.createdAt),
    next_run_at: iso(c.nextRunAt),
    last_run: cronRun(c.lastRun),
  };
}

export const WEBHOOK_FIELDS = /* GraphQL */ `
  fragment RestWebhook on Webhook { id url events active createdAt lastDelivery { status responseStatus lastAttemptAt } }
`;

export function webhook(w: Data) {
  const last = w.lastDelivery;
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    active: w.active,
    last_delivery: last ? { status: lower(last.status), response_status: last.responseStatus, at: iso(last.lastAttemptAt) } : null,
    created_at: iso(w.createdAt),
  };
}

export function createdWebhook(c: Data) {
  const w = c.webhook;
  return { id: w.id, url: w.url, events: w.events, active: w.active, secret: c.secret, created_at: iso(w.createdAt) };
}

export function webhookTest(r: Data) {
  return { delivery_id: r.deliveryId, status: lower(r.status), response_status: r.responseStatus, duration_ms: r.durationMs };
}
