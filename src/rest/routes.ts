import { Data, ResponseBody, valueAt } from './define-resource';
import * as resources from './resources';

export const API_RELEASES = ['2026-01-15', '2026-09-01'] as const;
export type ApiRelease = (typeof API_RELEASES)[number];
export const LATEST_RELEASE: ApiRelease = API_RELEASES[API_RELEASES.length - 1];

export interface RestRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** The JSON body with its REST field names turned into the GraphQL input's (see `Route.body`). */
  input: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Fastify path syntax; exactly the service document's path. */
  path: string;
  /** The GraphQL operation this endpoint executes; parsed and validated once at start. */
  operation: string;
  variables(req: RestRequest): Record<string, unknown>;
  /** Query parameters the endpoint takes; any other is a 422. */
  query?: readonly string[];
  /** The JSON body's fields, REST name → GraphQL input field name; any other field is a 422. */
  body?: Readonly<Record<string, string>>;
  /** Success status; a function where it depends on the outcome (201 created, 200 updated). */
  status: number | ((data: Data) => number);
  /** GraphQL argument names as REST names, for errors (`first` → `limit`). */
  fields?: Record<string, string>;
  /** The API release that introduced the endpoint. */
  since: ApiRelease;
  /** One line for the API reference (GET /openapi.json, /docs). */
  summary: string;
  /**
   * The response body: a declaration of resources.ts (its presenter and its OpenAPI schema) and
   * the part of the operation's data it presents; absent when only 204.
   */
  response?: { body: ResponseBody; of(data: Data): unknown };
  /** Each success status with what it means; required where `status` is a function. */
  statuses?: Readonly<Partial<Record<200 | 201 | 204, string>>>;
  /** Request headers passed to the operation; each named in `fields` as the variable's REST name. */
  headers?: readonly string[];
  /** Only the egg's owner may call it (403 for collaborators). */
  ownerOnly?: boolean;
  /**
   * A list that `Accept: application/x-ndjson` downloads whole: every item, one JSON object per
   * line, read a page at a time (so in constant memory) by running the operation again from each
   * page's cursor, `page` items at a time. Not when `tail` is given: that is one page.
   */
  download?: { page: number };
  /** Response headers taken from the operation's data (absent values send no header). */
  responseHeaders?(data: Data): Record<string, string | null | undefined>;
}

const PAGE_FIELDS = { first: 'limit', after: 'cursor' };

/** The query parameters of both logs endpoints (a deployment's, an egg's) and their variables. */
const LOG_QUERY = ['type', 'since', 'until', 'tail', 'q', 'limit', 'cursor'] as const;
const logVariables = (req: RestRequest) => ({
  type: enumParam(req.query.type),
  since: req.query.since,
  until: req.query.until,
  tail: intParam(req.query.tail),
  q: req.query.q,
  limit: intParam(req.query.limit),
  cursor: req.query.cursor,
});

/** Query strings carry text; integers are passed as numbers so GraphQL's Int accepts them. */
export function intParam(v: unknown): unknown {
  return typeof v === 'string' && /^-?\d{1,15}$/.test(v) ? Number(v) : v;
}
export function boolParam(v: unknown): unknown {
  return v === 'true' ? true : v === 'false' ? false : v;
}
export function enumParam(v: unknown): unknown {
  return typeof v === 'string' && /^[a-z_]+$/.test(v) ? v.toUpperCase() : v;
}

/** The response body of a row for its operation's data. */
export function presentResponse(route: Route, data: Data): unknown {
  return route.response?.body.present(route.response.of(data));
}

/** Every documented REST endpoint, one row each. */
export const routes: Route[] = [
  {
    method: 'POST',
    path: '/deploy',
    operation: /* GraphQL */ `
      mutation RestDeploy($input: DeployInput!, $idempotencyKey: String) {
        deploy(input: $input, idempotencyKey: $idempotencyKey) {
          ...RestDeployment
        }
      }
      ${resources.Deployment.fragment}
    `,
    body: { project: 'project', env: 'env', source: 'source', image: 'image' },
    variables: (req) => ({ input: req.input, idempotencyKey: req.headers['idempotency-key'] }),
    status: 201,
    fields: { idempotencyKey: 'Idempotency-Key' },
    since: '2026-01-15',
    summary: 'Deploy an egg',
    response: { body: resources.Deployment, of: (d) => d.deploy },
    headers: ['Idempotency-Key'],
  },
  {
    method: 'GET',
    path: '/deployments',
    operation: /* GraphQL */ `
      query RestDeployments($project: String, $status: DeploymentStatus, $limit: Int, $cursor: String) {
        deployments(project: $project, status: $status, first: $limit, after: $cursor) {
          nodes {
            ...RestDeployment
          }
          pageInfo {
            hasNextPage
            endCursor
          }
        }
      }
      ${resources.Deployment.fragment}
    `,
    query: ['project', 'status', 'limit', 'cursor'],
    variables: (req) => ({
      project: req.query.project,
      status: enumParam(req.query.status),
      limit: intParam(req.query.limit),
      cursor: req.query.cursor,
    }),
    status: 200,
    fields: PAGE_FIELDS,
    since: '2026-01-15',
    summary: 'List deployments',
    response: { body: resources.DeploymentList, of: (d) => d.deployments },
  },
  {
    method: 'GET',
    path: '/deployments/:id',
    operation: /* GraphQL */ `
      query RestDeployment($id: ID!) {
        deployment(id: $id) {
          ...RestDeployment
        }
      }
      ${resources.Deployment.fragment}
    `,
    variables: (req) => ({ id: req.params.id }),
    status: 200,
    since: '2026-01-15',
    summary: 'Get a deployment',
    response: { body: resources.Deployment, of: (d) => d.deployment },
  },
  {
    method: 'DELETE',
    path: '/deployments/:id',
    operation: /* GraphQL */ `
      mutation RestDeleteDeployment($id: ID!) {
        deleteDeployment(id: $id)
      }
    `,
    variables: (req) => ({ id: req.params.id }),
    status: 204,
    since: '2026-01-15',
    summary: 'Delete a deployment',
  },
  {
    method: 'GET',
    path: '/deployments/:id/logs',
    operation: /* GraphQL */ `
      query RestDeploymentLogs($id: ID!, $type: LogType, $since: DateTime, $until: DateTime, $tail: Int, $q: String, $limit: Int, $cursor: String) {
        deployment(id: $id) {
          logsRemovedBefore
          logs(type: $type, since: $since, until: $until, tail: $tail, q: $q, first: $limit, after: $cursor) {
            nodes {
              ...RestLogLine
            }
            pageInfo {
              hasNextPage
              endCursor
            }
          }
        }
      }
      ${resources.LogLine.fragment}
    `,
    query: LOG_QUERY,
    variables: (req) => ({ id: req.params.id, ...logVariables(req) }),
    status: 200,
    fields: PAGE_FIELDS,
    since: '2026-01-15',
    summary: 'Read a deployment’s logs',
    response: { body: resources.LogLineList, of: (d) => valueAt(d, 'deployment.logs') },
    download: { page: 1000 },
    // Retention removed the lines before this: the log starts at the oldest line kept.
    responseHeaders: (d) => ({ 'Hatchery-Logs-Removed-Before': valueAt(d, 'deployment.logsRemovedBefore') as string | null }),
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/logs',
    operation: /* GraphQL */ `
      query RestAppLogs($slug: String!, $type: LogType, $since: DateTime, $until: DateTime, $tail: Int, $q: String, $limit: Int, $cursor: String) {
        app(slug: $slug) {
          logs(type: $type, since: $since, until: $until, tail: $tail, q: $q, first: $limit, after: $cursor) {
            nodes {
              ...RestAppLogLine
            }
            pageInfo {
              hasNextPage
              endCursor
            }
          }
        }
      }
      ${resources.AppLogLine.fragment}
    `,
    query: LOG_QUERY,
    variables: (req) => ({ slug: req.params.slug, ...logVariables(req) }),
    status: 200,
    fields: PAGE_FIELDS,
    since: '2026-09-01',
    summary: 'Read an egg’s logs, across its deployments',
    response: { body: resources.AppLogLineList, of: (d) => valueAt(d, 'app.logs') },
    download: { page: 500 },
  },
  {
    method: 'PATCH',
    path: '/apps/:slug/resources',
    operation: /* GraphQL */ `
      mutation RestUpdateResources($slug: String!, $input: UpdateResourcesInput!) {
        updateResources(app: $slug, input: $input) {
          ...RestResources
        }
      }
      ${resources.Resources.fragment}
    `,
    body: { memory_mb: 'memoryMb', replicas: 'replicas' },
    variables: (req) => ({ slug: req.params.slug, input: req.input }),
    status: 200,
    since: '2026-09-01',
    summary: 'Set an egg’s memory and replicas',
    statuses: {
      200: 'The memory settings (the replica settings are read through GraphQL: `App.replicas`, `effectiveReplicas`, `replicasCap`)',
    },
    response: { body: resources.Resources, of: (d) => d.updateResources },
    ownerOnly: true,
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/volume',
    operation: /* GraphQL */ `
      mutation RestProvisionVolume($slug: String!, $input: ProvisionVolumeInput!) {
        provisionVolume(app: $slug, input: $input) {
          created
          volume {
            ...RestVolume
          }
        }
      }
      ${resources.Volume.fragment}
    `,
    body: { size_mb: 'sizeMb' },
    variables: (req) => ({ slug: req.params.slug, input: req.input }),
    status: (d) => (valueAt(d, 'provisionVolume.created') ? 201 : 200),
    since: '2026-01-15',
    summary: 'Provision, resize or restore the volume',
    response: { body: resources.Volume, of: (d) => valueAt(d, 'provisionVolume.volume') },
    statuses: { 201: 'Provisioned', 200: 'Resized, or restored from its grace period' },
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/volume',
    operation: /* GraphQL */ `
      query RestVolume($slug: String!) {
        volume(app: $slug) {
          ...RestVolume
        }
      }
      ${resources.Volume.fragment}
    `,
    variables: (req) => ({ slug: req.params.slug }),
    status: 200,
    since: '2026-01-15',
    summary: 'Get the volume',
    response: { body: resources.Volume, of: (d) => d.volume },
  },
  {
    method: 'DELETE',
    path: '/v1/apps/:slug/volume',
    operation: /* GraphQL */ `
      mutation RestDeleteVolume($slug: String!, $now: Boolean) {
        deleteVolume(app: $slug, now: $now) {
          ...RestVolume
        }
      }
      ${resources.Volume.fragment}
    `,
    query: ['now'],
    variables: (req) => ({ slug: req.params.slug, now: boolParam(req.query.now) }),
    status: (d) => (d.deleteVolume ? 200 : 204),
    since: '2026-01-15',
    summary: 'Delete the volume',
    response: { body: resources.Volume, of: (d) => d.deleteVolume },
    statuses: { 200: 'Scheduled for erasure: the volume in `grace_deleting`, `erase_at` 7 days ahead', 204: 'Erased at once (`now=true`); no body' },
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/previews',
    operation: /* GraphQL */ `
      mutation RestUpsertPreview($slug: String!, $input: UpsertPreviewInput!) {
        upsertPreview(app: $slug, input: $input) {
          created
          preview {
            ...RestPreview
          }
        }
      }
      ${resources.Preview.fragment}
    `,
    body: { pr_number: 'prNumber', source: 'source' },
    variables: (req) => ({ slug: req.params.slug, input: req.input }),
    status: (d) => (valueAt(d, 'upsertPreview.created') ? 201 : 200),
    since: '2026-01-15',
    summary: 'Create or update a preview',
    response: { body: resources.Preview, of: (d) => valueAt(d, 'upsertPreview.preview') },
    statuses: { 201: 'Created', 200: 'An existing preview redeployed, `expires_at` extended' },
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/previews',
    operation: /* GraphQL */ `
      query RestPreviews($slug: String!) {
        previews(app: $slug) {
          ...RestPreview
        }
      }
      ${resources.Preview.fragment}
    `,
    variables: (req) => ({ slug: req.params.slug }),
    status: 200,
    since: '2026-01-15',
    summary: 'List previews',
    response: { body: resources.PreviewList, of: (d) => d.previews },
  },
  {
    method: 'DELETE',
    path: '/v1/apps/:slug/previews/:pr',
    operation: /* GraphQL */ `
      mutation RestDeletePreview($slug: String!, $pr: Int!) {
        deletePreview(app: $slug, prNumber: $pr)
      }
    `,
    variables: (req) => ({ slug: req.params.slug, pr: intParam(req.params.pr) }),
    status: 204,
    fields: { prNumber: 'pr' },
    since: '2026-01-15',
    summary: 'Delete a preview',
  },
  {
    method: 'POST',
    path: '/billing/energy-pack/checkout',
    operation: /* GraphQL */ `
      mutation RestCheckout {
        createEnergyPackCheckout {
          ...RestCheckout
        }
      }
      ${resources.Checkout.fragment}
    `,
    body: {},
    variables: () => ({}),
    status: 201,
    since: '2026-09-01',
    summary: 'Start an energy pack checkout',
    response: { body: resources.Checkout, of: (d) => d.createEnergyPackCheckout },
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/crons',
    operation: /* GraphQL */ `
      mutation RestCreateCron($slug: String!, $input: CreateCronInput!) {
        createCron(app: $slug, input: $input) {
          ...RestCreatedCron
        }
      }
      ${resources.CreatedCron.fragment}
    `,
    body: { schedule: 'schedule', command: 'command' },
    variables: (req) => ({ slug: req.params.slug, input: req.input }),
    status: 201,
    since: '2026-01-15',
    summary: 'Create a cron',
    response: { body: resources.CreatedCron, of: (d) => d.createCron },
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/crons',
    operation: /* GraphQL */ `
      query RestCrons($slug: String!, $limit: Int, $cursor: String) {
        crons(app: $slug, first: $limit, after: $cursor) {
          nodes {
            ...RestCron
          }
          pageInfo {
            hasNextPage
            endCursor
          }
        }
      }
      ${resources.Cron.fragment}
    `,
    query: ['limit', 'cursor'],
    variables: (req) => ({ slug: req.params.slug, limit: intParam(req.query.limit), cursor: req.query.cursor }),
    status: 200,
    fields: PAGE_FIELDS,
    since: '2026-01-15',
    summary: 'List crons',
    response: { body: resources.CronList, of: (d) => d.crons },
  },
  {
    method: 'DELETE',
    path: '/v1/apps/:slug/crons/:id',
    operation: /* GraphQL */ `
      mutation RestDeleteCron($slug: String!, $id: ID!) {
        deleteCron(app: $slug, id: $id)
      }
    `,
    variables: (req) => ({ slug: req.params.slug, id: req.params.id }),
    status: 204,
    since: '2026-01-15',
    summary: 'Delete a cron',
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/crons/:id/runs',
    operation: /* GraphQL */ `
      query RestCronRuns($slug: String!, $id: ID!, $limit: Int, $cursor: String) {
        cronRuns(app: $slug, id: $id, first: $limit, after: $cursor) {
          nodes {
            ...RestCronRun
          }
          pageInfo {
            hasNextPage
            endCursor
          }
        }
      }
      ${resources.CronRun.fragment}
    `,
    query: ['limit', 'cursor'],
    variables: (req) => ({ slug: req.params.slug, id: req.params.id, limit: intParam(req.query.limit), cursor: req.query.cursor }),
    status: 200,
    fields: PAGE_FIELDS,
    since: '2026-01-15',
    summary: 'List a cron’s runs',
    response: { body: resources.CronRunList, of: (d) => d.cronRuns },
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/crons/:id/runs/:run/cancel',
    operation: /* GraphQL */ `
      mutation RestCancelCronRun($slug: String!, $id: ID!, $run: ID!) {
        cancelCronRun(app: $slug, id: $id, run: $run) {
          ...RestCronRun
        }
      }
      ${resources.CronRun.fragment}
    `,
    variables: (req) => ({ slug: req.params.slug, id: req.params.id, run: req.params.run }),
    status: 200,
    since: '2026-09-01',
    summary: 'Cancel a running cron run',
    response: { body: resources.CronRun, of: (d) => d.cancelCronRun },
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/webhooks',
    operation: /* GraphQL */ `
      mutation RestCreateWebhook($slug: String!, $input: CreateWebhookInput!) {
        createWebhook(app: $slug, input: $input) {
          ...RestCreatedWebhook
        }
      }
      ${resources.CreatedWebhook.fragment}
    `,
    body: { url: 'url', events: 'events' },
    variables: (req) => ({ slug: req.params.slug, input: req.input }),
    status: 201,
    since: '2026-01-15',
    summary: 'Register a webhook',
    response: { body: resources.CreatedWebhook, of: (d) => d.createWebhook },
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/webhooks',
    operation: /* GraphQL */ `
      query RestWebhooks($slug: String!) {
        webhooks(app: $slug) {
          ...RestWebhook
        }
      }
      ${resources.Webhook.fragment}
    `,
    variables: (req) => ({ slug: req.params.slug }),
    status: 200,
    since: '2026-01-15',
    summary: 'List webhooks',
    response: { body: resources.WebhookList, of: (d) => d.webhooks },
  },
  {
    method: 'DELETE',
    path: '/v1/apps/:slug/webhooks/:id',
    operation: /* GraphQL */ `
      mutation RestDeleteWebhook($slug: String!, $id: ID!) {
        deleteWebhook(app: $slug, id: $id)
      }
    `,
    variables: (req) => ({ slug: req.params.slug, id: req.params.id }),
    status: 204,
    since: '2026-01-15',
    summary: 'Delete a webhook',
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/webhooks/:id/test',
    operation: /* GraphQL */ `
      mutation RestTestWebhook($slug: String!, $id: ID!) {
        testWebhook(app: $slug, id: $id) {
          ...RestWebhookTestResult
        }
      }
      ${resources.WebhookTestResult.fragment}
    `,
    body: {},
    variables: (req) => ({ slug: req.params.slug, id: req.params.id }),
    status: 200,
    since: '2026-01-15',
    summary: 'Send a test ping',
    response: { body: resources.WebhookTestResult, of: (d) => d.testWebhook },
  },
  {
    method: 'POST',
    path: '/v1/apps/:slug/log-drains',
    operation: /* GraphQL */ `
      mutation RestCreateLogDrain($slug: String!, $input: CreateLogDrainInput!) {
        createLogDrain(app: $slug, input: $input) {
          ...RestCreatedLogDrain
        }
      }
      ${resources.CreatedLogDrain.fragment}
    `,
    body: { url: 'url', format: 'format' },
    variables: (req) => ({ slug: req.params.slug, input: { ...req.input, ...('format' in req.input ? { format: enumParam(req.input.format) } : {}) } }),
    status: 201,
    since: '2026-09-01',
    summary: 'Create a log drain',
    response: { body: resources.CreatedLogDrain, of: (d) => d.createLogDrain },
  },
  {
    method: 'GET',
    path: '/v1/apps/:slug/log-drains',
    operation: /* GraphQL */ `
      query RestLogDrains($slug: String!) {
        logDrains(app: $slug) {
          ...RestLogDrain
        }
      }
      ${resources.LogDrain.fragment}
    `,
    variables: (req) => ({ slug: req.params.slug }),
    status: 200,
    since: '2026-09-01',
    summary: 'List log drains',
    response: { body: resources.LogDrainList, of: (d) => d.logDrains },
  },
  {
    method: 'DELETE',
    path: '/v1/apps/:slug/log-drains/:id',
    operation: /* GraphQL */ `
      mutation RestDeleteLogDrain($slug: String!, $id: ID!) {
        deleteLogDrain(app: $slug, id: $id)
      }
    `,
    variables: (req) => ({ slug: req.params.slug, id: req.params.id }),
    status: 204,
    since: '2026-09-01',
    summary: 'Delete a log drain',
  },
];
