import { defineList, defineResource, Fields, ResponseBody, within } from './define-resource';
import { id, ref, URI } from './json-schema';

/**
 * Every REST response body, declared once (see define-resource.ts): REST name → GraphQL field.
 * Types, nullability and descriptions come from the GraphQL schema; `schema` refines them.
 */

export const Deployment = defineResource({
  name: 'Deployment',
  graphqlType: 'Deployment',
  fields: {
    id: { from: 'id', schema: id('dep') },
    project: { from: 'app.slug', schema: ref('Slug'), description: 'The egg deployed (its slug).' },
    status: { from: 'status', enum: true },
    url: { from: 'url', schema: URI },
    created_at: 'createdAt',
    updated_at: 'updatedAt',
    finished_at: 'finishedAt',
    memory_mb: 'memoryMb',
    volume_mb: 'volumeMb',
    env_keys: 'envKeys',
    source: { from: 'source', schema: id('src') },
    image: 'image',
    failure_reason: 'failureReason',
  },
});
export const DeploymentList = defineList(Deployment);

export const LogLine = defineResource({
  name: 'LogLine',
  graphqlType: 'LogLine',
  fields: { timestamp: 'timestamp', type: { from: 'type', enum: true }, message: 'message' },
});
export const LogLineList = defineList(LogLine);

export const AppLogLine = defineResource({
  name: 'AppLogLine',
  graphqlType: 'LogLine',
  description: 'One line of an egg’s logs: a deployment log line with the deployment that wrote it.',
  fields: {
    deployment: { from: 'deploymentId', schema: id('dep') },
    seq: 'seq',
    timestamp: 'timestamp',
    type: { from: 'type', enum: true },
    stream: { from: 'stream', enum: true },
    message: 'message',
  },
});
export const AppLogLineList = defineList(AppLogLine);

export const Resources = defineResource({
  name: 'Resources',
  graphqlType: 'App',
  description: 'The memory settings of an egg.',
  fields: { slug: { from: 'slug', schema: ref('Slug') }, memory_mb: 'memoryMb', effective_memory_mb: 'effectiveMemoryMb', cap_mb: 'capMb' },
});

export const Volume = defineResource({
  name: 'Volume',
  graphqlType: 'Volume',
  fields: {
    size_mb: 'sizeMb',
    used_mb: 'usedMb',
    status: { from: 'status', enum: true },
    mount: { from: 'mount', schema: { type: 'string', const: '/data' } },
    over_quota: 'overQuota',
    created_at: 'createdAt',
    erase_at: 'eraseAt',
  },
});

export const Preview = defineResource({
  name: 'Preview',
  graphqlType: 'Preview',
  fields: {
    slug: 'slug',
    pr_number: { from: 'prNumber', schema: { type: 'integer', minimum: 1 } },
    url: { from: 'url', schema: URI },
    status: { from: 'status', enum: true },
    expires_at: 'expiresAt',
    created_at: 'createdAt',
  },
});
export const PreviewList = defineList(Preview);

export const Checkout = defineResource({
  name: 'Checkout',
  graphqlType: 'EnergyPackCheckout',
  fields: {
    checkout_url: { from: 'checkoutUrl', schema: URI },
    session_id: { from: 'sessionId', schema: id('chk') },
    expires_at: 'expiresAt',
  },
});

export const CronRun = defineResource({
  name: 'CronRun',
  graphqlType: 'CronRun',
  fields: {
    id: { from: 'id', schema: id('run') },
    status: { from: 'status', enum: true },
    exit_code: 'exitCode',
    scheduled_at: 'scheduledAt',
    started_at: 'startedAt',
    finished_at: 'finishedAt',
  },
});
export const CronRunList = defineList(CronRun);

const cronFields = {
  id: { from: 'id', schema: id('cron') },
  schedule: 'schedule',
  command: 'command',
  enabled: 'enabled',
  created_at: 'createdAt',
  next_run_at: 'nextRunAt',
} satisfies Fields;

export const CreatedCron = defineResource({ name: 'CreatedCron', graphqlType: 'Cron', description: 'A cron as created.', fields: cronFields });
export const Cron = defineResource({
  name: 'Cron',
  graphqlType: 'Cron',
  fields: { ...cronFields, last_run: { from: 'lastRun', resource: CronRun } },
});
export const CronList = defineList(Cron);

export const WebhookLastDelivery = defineResource({
  name: 'WebhookLastDelivery',
  graphqlType: 'WebhookDelivery',
  description: 'The outcome of the delivery attempted most recently.',
  fields: { status: { from: 'status', enum: true }, response_status: 'responseStatus', at: 'lastAttemptAt' },
});

const webhookFields = {
  id: { from: 'id', schema: id('wh') },
  url: { from: 'url', schema: URI },
  events: { from: 'events', schema: { type: 'array', items: { type: 'string', enum: ['deploy'] } } },
  active: 'active',
} satisfies Fields;

export const Webhook = defineResource({
  name: 'Webhook',
  graphqlType: 'Webhook',
  fields: { ...webhookFields, last_delivery: { from: 'lastDelivery', resource: WebhookLastDelivery }, created_at: 'createdAt' },
});
export const WebhookList = defineList(Webhook);

export const CreatedWebhook = defineResource({
  name: 'CreatedWebhook',
  graphqlType: 'CreatedWebhook',
  fields: {
    ...within('webhook', webhookFields),
    secret: { from: 'secret', schema: { type: 'string', pattern: '^whsec_' } },
    created_at: 'webhook.createdAt',
  },
});

export const WebhookTestResult = defineResource({
  name: 'WebhookTestResult',
  graphqlType: 'WebhookTestResult',
  fields: {
    delivery_id: { from: 'deliveryId', schema: id('whd') },
    status: { from: 'status', enum: true },
    response_status: 'responseStatus',
    duration_ms: 'durationMs',
  },
});

const logDrainFields = {
  id: { from: 'id', schema: id('drn') },
  url: 'url',
  format: { from: 'format', enum: true },
  status: { from: 'status', enum: true },
  disabled_reason: 'disabledReason',
  last_error: 'lastError',
  last_delivered_at: 'lastDeliveredAt',
  created_at: 'createdAt',
} satisfies Fields;

export const LogDrain = defineResource({ name: 'LogDrain', graphqlType: 'LogDrain', fields: logDrainFields });
export const LogDrainList = defineList(LogDrain);

export const CreatedLogDrain = defineResource({
  name: 'CreatedLogDrain',
  graphqlType: 'CreatedLogDrain',
  fields: {
    ...within('logDrain', logDrainFields),
    secret: { from: 'secret', schema: { type: 'string', pattern: '^whsec_' } },
  },
});

export const Source = defineResource({
  name: 'Source',
  graphqlType: 'Source',
  fields: {
    id: { from: 'id', schema: id('src') },
    sha256: { from: 'sha256', schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } },
    size_bytes: 'sizeBytes',
    created_at: 'createdAt',
  },
});

/** The bodies in the order the OpenAPI document lists their schemas. */
export const RESPONSE_BODIES: readonly ResponseBody[] = [
  Deployment,
  DeploymentList,
  LogLine,
  LogLineList,
  AppLogLine,
  AppLogLineList,
  Resources,
  Volume,
  Preview,
  PreviewList,
  Checkout,
  CreatedCron,
  Cron,
  CronList,
  CronRun,
  CronRunList,
  WebhookLastDelivery,
  Webhook,
  WebhookList,
  CreatedWebhook,
  WebhookTestResult,
  LogDrain,
  LogDrainList,
  CreatedLogDrain,
  Source,
];
