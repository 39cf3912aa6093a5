import {
  DocumentNode,
  getNullableType,
  GraphQLEnumType,
  GraphQLField,
  GraphQLInputObjectType,
  GraphQLInputType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLOutputType,
  GraphQLScalarType,
  GraphQLSchema,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  OperationDefinitionNode,
  parse,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import { ErrorCode } from '../errors';
import { ERROR_HTTP } from '../http/problems';
import { IdPrefix } from '../ids';
import { API_RELEASES, LATEST_RELEASE, Route, routes } from './routes';

/**
 * The OpenAPI 3.1 document of the REST layer, generated from the route table and the GraphQL
 * schema: parameters and bodies come from each row's operation variables, descriptions from the
 * schema's field and argument descriptions, response bodies from the resource schemas below
 * (one per presenter in presenters.ts). Nothing here is written twice.
 */

export type JsonSchema = { [key: string]: unknown };
export type OpenApiDocument = {
  openapi: string;
  info: JsonSchema;
  servers: JsonSchema[];
  security: JsonSchema[];
  tags: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, JsonSchema>;
    responses: Record<string, JsonSchema>;
    headers: Record<string, JsonSchema>;
    securitySchemes: Record<string, JsonSchema>;
  };
};
export type OpenApiOperation = {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  'x-hatchery-since': string;
  'x-graphql-operation': string;
  parameters: JsonSchema[];
  requestBody?: JsonSchema;
  responses: Record<string, JsonSchema>;
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const TIMESTAMP = ref('Timestamp');
const URI = { type: 'string', format: 'uri' };
const id = (prefix: IdPrefix) => ({ type: 'string', pattern: `^${prefix}_[0-7][0-9a-hjkmnp-tv-z]{25}$`, examples: [`${prefix}_01kf3x7q2m0000000000000000`] });

// ---------------------------------------------------------------------------------------------
// Resource schemas: the shapes presenters.ts returns. Each property names the GraphQL field it is
// presented from, which gives its type, nullability and description; `schema` refines the type
// (id patterns, URLs, references) and `description` replaces the schema's wording.

interface Prop {
  /** The GraphQL field: `name` of the resource's type, or `Type.name`. */
  field: string;
  schema?: JsonSchema;
  description?: string;
}
type Props = Record<string, string | Prop>;
type Build = (g: Gql) => JsonSchema;

function resource(type: string, props: Props, description?: string): Build {
  return (g) => {
    const properties: Record<string, JsonSchema> = {};
    for (const [name, spec] of Object.entries(props)) {
      const p = typeof spec === 'string' ? { field: spec } : spec;
      const [owner, fieldName] = p.field.includes('.') ? p.field.split('.') : [type, p.field];
      const field = g.outputField(owner, fieldName);
      const base = p.schema ?? g.outputSchema(getNullableType(field.type) as GraphQLOutputType);
      properties[name] = {
        ...(isNonNullType(field.type) ? base : nullable(base)),
        description: g.text(p.description ?? field.description ?? ''),
      };
    }
    return {
      type: 'object',
      description: g.text(description ?? g.objectType(type).description ?? ''),
      required: Object.keys(props),
      properties,
      additionalProperties: false,
    };
  };
}

function listOf(item: string): Build {
  return () => ({
    type: 'object',
    description: `A page of ${item} records.`,
    required: ['data', 'has_more', 'next_cursor'],
    properties: {
      data: { type: 'array', items: ref(item), description: 'The records of this page.' },
      has_more: { type: 'boolean', description: 'Whether another page follows.' },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` to get the next page; null on the last page.' },
    },
    additionalProperties: false,
  });
}

const CRON_PROPS = {
  id: { field: 'id', schema: id('cron') },
  schedule: 'schedule',
  command: 'command',
  enabled: 'enabled',
  created_at: 'createdAt',
  next_run_at: 'nextRunAt',
} satisfies Props;

const WEBHOOK_PROPS = {
  id: { field: 'Webhook.id', schema: id('wh') },
  url: { field: 'Webhook.url', schema: URI },
  events: { field: 'Webhook.events', schema: { type: 'array', items: { type: 'string', enum: ['deploy'] } } },
  active: 'Webhook.active',
} satisfies Props;

/** Response bodies, by component name; routes name theirs in `response`. */
const RESOURCES = {
  Deployment: resource('Deployment', {
    id: { field: 'id', schema: id('dep') },
    project: { field: 'app', schema: ref('Slug'), description: 'The egg deployed (its slug).' },
    status: 'status',
    url: { field: 'url', schema: URI },
    created_at: 'createdAt',
    updated_at: 'updatedAt',
    finished_at: 'finishedAt',
    memory_mb: 'memoryMb',
    volume_mb: 'volumeMb',
    env_keys: 'envKeys',
    failure_reason: 'failureReason',
  }),
  DeploymentList: listOf('Deployment'),
  LogLine: resource('LogLine', { timestamp: 'timestamp', type: 'type', message: 'message' }),
  LogLineList: listOf('LogLine'),
  Resources: resource(
    'App',
    { slug: { field: 'slug', schema: ref('Slug') }, memory_mb: 'memoryMb', effective_memory_mb: 'effectiveMemoryMb', cap_mb: 'capMb' },
    'The memory settings of an egg.',
  ),
  Volume: resource('Volume', {
    size_mb: 'sizeMb',
    used_mb: 'usedMb',
    status: 'status',
    mount: { field: 'mount', schema: { type: 'string', const: '/data' } },
    over_quota: 'overQuota',
    created_at: 'createdAt',
    erase_at: 'eraseAt',
  }),
  Preview: resource('Preview', {
    slug: 'slug',
    pr_number: { field: 'prNumber', schema: { type: 'integer', minimum: 1 } },
    url: { field: 'url', schema: URI },
    status: 'status',
    expires_at: 'expiresAt',
    created_at: 'createdAt',
  }),
  PreviewList: listOf('Preview'),
  Checkout: resource('EnergyPackCheckout', {
    checkout_url: { field: 'checkoutUrl', schema: URI },
    session_id: { field: 'sessionId', schema: id('chk') },
    expires_at: 'expiresAt',
  }),
  CreatedCron: resource('Cron', CRON_PROPS, 'A cron as created.'),
  Cron: resource('Cron', { ...CRON_PROPS, last_run: { field: 'lastRun', schema: ref('CronRun') } }),
  CronList: listOf('Cron'),
  CronRun: resource('CronRun', {
    id: { field: 'id', schema: id('run') },
    status: 'status',
    exit_code: 'exitCode',
    scheduled_at: 'scheduledAt',
    started_at: 'startedAt',
    finished_at: 'finishedAt',
  }),
  CronRunList: listOf('CronRun'),
  WebhookLastDelivery: resource(
    'WebhookDelivery',
    { status: 'status', response_status: 'responseStatus', at: 'lastAttemptAt' },
    'The outcome of the delivery attempted most recently.',
  ),
  Webhook: resource('Webhook', {
    ...WEBHOOK_PROPS,
    last_delivery: { field: 'lastDelivery', schema: ref('WebhookLastDelivery') },
    created_at: 'createdAt',
  }),
  WebhookList: listOf('Webhook'),
  CreatedWebhook: resource('CreatedWebhook', {
    ...WEBHOOK_PROPS,
    secret: { field: 'secret', schema: { type: 'string', pattern: '^whsec_' } },
    created_at: 'Webhook.createdAt',
  }),
  WebhookTestResult: resource('WebhookTestResult', {
    delivery_id: { field: 'deliveryId', schema: id('whd') },
    status: 'status',
    response_status: 'responseStatus',
    duration_ms: 'durationMs',
  }),
} satisfies Record<string, Build>;

/** The name of a response body schema, for a route's `response`. */
export type ResponseSchema = keyof typeof RESOURCES;

function sharedSchemas(): Record<string, JsonSchema> {
  const codes = [...new Set(Object.values(ERROR_HTTP).map((e) => e.code))];
  return {
    Timestamp: {
      type: 'string',
      format: 'date-time',
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
      description: 'ISO 8601 UTC with milliseconds.',
      examples: ['2026-11-20T12:00:00.000Z'],
    },
    Slug: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,38}[a-z0-9]$', description: 'An egg’s slug.' },
    FieldError: {
      type: 'object',
      required: ['field', 'message'],
      properties: {
        field: { type: 'string', description: 'The body field, query parameter or header at fault, by its REST name.' },
        message: { type: 'string', minLength: 1 },
      },
      additionalProperties: false,
    },
    Problem: {
      type: 'object',
      description: 'An RFC 9457 problem details body (`application/problem+json`).',
      required: ['type', 'title', 'status', 'code', 'detail', 'request_id'],
      properties: {
        type: { type: 'string', format: 'uri', description: 'Identifies the problem type.' },
        title: { type: 'string', minLength: 1, description: 'A short summary of the problem type.' },
        status: { type: 'integer', description: 'The HTTP status.' },
        code: { type: 'string', enum: codes, description: 'A stable, machine-readable code.' },
        detail: { type: 'string', minLength: 1, description: 'What went wrong with this request.' },
        request_id: { type: 'string', description: 'The request’s id, also in the server log.' },
        errors: { type: 'array', items: ref('FieldError'), description: 'One entry per field at fault.' },
        error_id: { type: 'string', description: 'For an internal error: the id under which the server logged it.' },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// GraphQL types → JSON Schema.

class Gql {
  private readonly enumValues: Set<string>;

  constructor(readonly schema: GraphQLSchema) {
    this.enumValues = new Set(
      Object.values(schema.getTypeMap())
        .filter(isEnumType)
        .filter((t) => !t.name.startsWith('__'))
        .flatMap((t) => t.getValues().map((v) => v.name)),
    );
  }

  objectType(name: string): GraphQLObjectType {
    const type = this.schema.getType(name);
    if (!isObjectType(type)) throw new Error(`OpenAPI: GraphQL type ${name} is not an object type`);
    return type;
  }

  outputField(type: string, name: string): GraphQLField<unknown, unknown> {
    const field = this.objectType(type).getFields()[name];
    if (!field) throw new Error(`OpenAPI: GraphQL field ${type}.${name} does not exist`);
    return field;
  }

  /** REST wording: enum values in lower case, GraphQL page fields by their REST names. */
  text(s: string): string {
    return s
      .replace(/\b[A-Z][A-Z_]+\b/g, (w) => {
        if (this.enumValues.has(w)) return w.toLowerCase();
        return w in ERROR_HTTP ? `${ERROR_HTTP[w as ErrorCode].status} \`${ERROR_HTTP[w as ErrorCode].code}\`` : w;
      })
      .replace(/`pageInfo\.endCursor`/g, '`next_cursor`');
  }

  scalar(type: GraphQLScalarType): JsonSchema {
    switch (type.name) {
      case 'ID':
      case 'String':
        return { type: 'string' };
      case 'Int':
        return { type: 'integer', format: 'int32' };
      case 'Float':
        return { type: 'number' };
      case 'Boolean':
        return { type: 'boolean' };
      case 'DateTime':
        return { type: 'string', format: 'date-time' };
      case 'JSONObject':
        return { type: 'object' };
      default:
        throw new Error(`OpenAPI: no JSON Schema for the GraphQL scalar ${type.name}`);
    }
  }

  /** Response values: REST shows enums in lower case and timestamps in one format. */
  outputSchema(type: GraphQLOutputType): JsonSchema {
    if (isNonNullType(type)) return this.outputSchema(type.ofType);
    if (isListType(type)) return { type: 'array', items: this.outputItem(type.ofType) };
    if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((v) => v.name.toLowerCase()) };
    if (isScalarType(type)) return type.name === 'DateTime' ? TIMESTAMP : this.scalar(type);
    throw new Error(`OpenAPI: GraphQL type ${String(type)} needs an explicit schema`);
  }

  private outputItem(type: GraphQLOutputType): JsonSchema {
    return isNonNullType(type) ? this.outputSchema(type) : nullable(this.outputSchema(type));
  }

  /**
   * Request values. Enums are upper case in bodies (GraphQL's own input coercion checks them) and
   * lower case in the query string, which the route rows upper-case (`enumParam`).
   */
  inputSchema(type: GraphQLInputType, where: 'body' | 'param'): JsonSchema {
    if (type instanceof GraphQLNonNull) return this.inputSchema(type.ofType, where);
    if (type instanceof GraphQLList) {
      const item = type.ofType as GraphQLInputType;
      return { type: 'array', items: isNonNullType(item) ? this.inputSchema(item, where) : nullable(this.inputSchema(item, where)) };
    }
    if (type instanceof GraphQLEnumType) {
      return { type: 'string', enum: type.getValues().map((v) => (where === 'param' ? v.name.toLowerCase() : v.name)) };
    }
    if (type instanceof GraphQLInputObjectType) throw new Error(`OpenAPI: input object ${type.name} cannot be a parameter`);
    return this.scalar(type as GraphQLScalarType);
  }
}

/** The same schema, also allowing null. */
function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.$ref === 'string') return { anyOf: [schema, { type: 'null' }] };
  const type = schema.type;
  const out: JsonSchema = { ...schema, type: Array.isArray(type) ? [...new Set([...type, 'null'])] : [type, 'null'] };
  if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
  if ('const' in schema) {
    delete out.const;
    out.enum = [schema.const, null];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Operations.

interface OperationShape {
  /** Each `$variable`'s argument description. */
  variables: Map<string, string | null | undefined>;
  /** The field the endpoint is about: the innermost one taking variables (else the root field). */
  field: GraphQLField<unknown, unknown>;
  /** Its path from the root, e.g. `deployment { logs }`. */
  path: string[];
}

function operationShape(g: Gql, document: DocumentNode): OperationShape {
  const typeInfo = new TypeInfo(g.schema);
  const variables = new Map<string, string | null | undefined>();
  const stack: string[] = [];
  let target: { field: GraphQLField<unknown, unknown>; path: string[] } | undefined;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      FragmentDefinition: () => false,
      Field: {
        enter(node) {
          stack.push(node.name.value);
          const def = typeInfo.getFieldDef();
          if (def && (!target || node.arguments?.some((a) => a.value.kind === 'Variable'))) target = { field: def, path: [...stack] };
        },
        leave() {
          stack.pop();
        },
      },
      Argument(node) {
        const arg = typeInfo.getArgument();
        if (node.value.kind === 'Variable' && arg && !variables.has(node.value.name.value)) variables.set(node.value.name.value, arg.description);
      },
    }),
  );
  if (!target) throw new Error('OpenAPI: an operation without fields');
  return { variables, ...target };
}

const TAGS: Record<string, string> = {
  deploy: 'Deployments',
  deployments: 'Deployments',
  resources: 'Resources',
  volume: 'Volumes',
  previews: 'Previews',
  billing: 'Billing',
  crons: 'Crons',
  webhooks: 'Webhooks',
};

function tagOf(route: Route): string {
  const first = route.path.replace(/^\/v1/, '').replace(/^\/apps\/:slug/, '').split('/')[1];
  const tag = TAGS[first];
  if (!tag) throw new Error(`OpenAPI: no tag for ${route.path}`);
  return tag;
}

const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

const STATUS_TEXT: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'Deleted; no body' };

/** Error statuses every table route can answer, and when a row adds more. */
function errorStatuses(route: Route): number[] {
  const statuses = [400, 401, 404, 408, 422, 429, 500, 503];
  if (route.body) statuses.push(413, 415);
  if (route.ownerOnly) statuses.push(403);
  return statuses.sort((a, b) => a - b);
}

function operation(g: Gql, route: Route): OpenApiOperation {
  const where = `REST ${route.method} ${route.path}`;
  const document = parse(route.operation);
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition');
  if (!op?.name) throw new Error(`${where}: the operation needs a name`);
  const variables = new Map(
    (op.variableDefinitions ?? []).map((v) => [v.variable.name.value, typeFromAST(g.schema, v.type as never) as GraphQLInputType]),
  );
  const shape = operationShape(g, document);

  const accounted = new Set<string>();
  const parameter = (name: string, variable: string, location: 'path' | 'query' | 'header'): JsonSchema => {
    const type = variables.get(variable);
    if (!type) throw new Error(`${where}: the ${location} parameter ${name} has no $${variable} variable`);
    accounted.add(variable);
    const description = shape.variables.get(variable);
    return {
      name,
      in: location,
      required: location === 'path' || isNonNullType(type),
      ...(description ? { description: g.text(description) } : {}),
      schema: g.inputSchema(type, 'param'),
    };
  };

  const parameters: JsonSchema[] = [];
  for (const [, name] of route.path.matchAll(/:(\w+)/g)) parameters.push(parameter(name, name, 'path'));
  for (const name of route.query ?? []) parameters.push(parameter(name, name, 'query'));
  for (const header of route.headers ?? []) {
    const variable = Object.entries(route.fields ?? {}).find(([, rest]) => rest === header)?.[0];
    if (!variable) throw new Error(`${where}: the header ${header} needs a \`fields\` entry naming its variable`);
    parameters.push(parameter(header, variable, 'header'));
  }
  parameters.push({ $ref: '#/components/parameters/ApiVersion' });

  let requestBody: JsonSchema | undefined;
  if (route.body) {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    let bodyRequired = false;
    if (Object.keys(route.body).length) {
      const inputType = variables.get('input');
      const input = inputType && getNullableType(inputType);
      if (!(input instanceof GraphQLInputObjectType)) throw new Error(`${where}: a body needs an input object variable $input`);
      accounted.add('input');
      bodyRequired = isNonNullType(inputType);
      const fields = input.getFields();
      for (const [restName, gqlName] of Object.entries(route.body)) {
        const field = fields[gqlName];
        if (!field) throw new Error(`${where}: ${input.name} has no field ${gqlName}`);
        const base = g.inputSchema(field.type, 'body');
        properties[restName] = {
          ...(isNonNullType(field.type) ? base : nullable(base)),
          ...(field.description ? { description: g.text(field.description) } : {}),
        };
        if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(restName);
      }
    }
    requestBody = {
      required: bodyRequired,
      ...(Object.keys(properties).length ? {} : { description: 'No fields: send no body or an empty JSON object.' }),
      content: {
        'application/json': {
          schema: { type: 'object', ...(required.length ? { required } : {}), properties, additionalProperties: false },
        },
      },
    };
  }

  const unaccounted = [...variables.keys()].filter((v) => !accounted.has(v));
  if (unaccounted.length) throw new Error(`${where}: variables ${unaccounted.join(', ')} are not a path, query, header or body field`);

  const responses: Record<string, JsonSchema> = {};
  const statuses = route.statuses ?? (typeof route.status === 'number' ? { [route.status]: STATUS_TEXT[route.status] } : undefined);
  if (!statuses) throw new Error(`${where}: a row whose status is a function lists its \`statuses\``);
  if (typeof route.status === 'number' && !(route.status in statuses)) throw new Error(`${where}: \`statuses\` lacks ${route.status}`);
  for (const [status, description] of Object.entries(statuses)) {
    const headers = { 'API-Version': { $ref: '#/components/headers/ApiVersion' } };
    if (status === '204') {
      responses[status] = { description, headers };
      continue;
    }
    if (!route.response) throw new Error(`${where}: a row answering ${status} names its \`response\` schema`);
    responses[status] = { description, headers, content: { 'application/json': { schema: ref(route.response) } } };
  }
  for (const status of errorStatuses(route)) responses[status] = { $ref: `#/components/responses/Problem${status}` };

  const since = route.since === API_RELEASES[0] ? '' : ` Pinned to an earlier API release (\`API-Version\`), it answers 404.`;
  const owner = route.ownerOnly ? ' Only the egg’s owner may call it (collaborators get 403).' : '';
  return {
    operationId: op.name.value.replace(/^Rest/, '').replace(/^./, (c) => c.toLowerCase()),
    summary: route.summary,
    description:
      `${g.text(shape.field.description ?? route.summary)}${owner}\n\n` +
      `Available since API release \`${route.since}\`.${since} ` +
      `GraphQL twin: \`${op.operation} { ${shape.path.join(' { ')}${' }'.repeat(shape.path.length)}\`.`,
    tags: [tagOf(route)],
    'x-hatchery-since': route.since,
    'x-graphql-operation': op.name.value,
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

function errorResponses(): Record<string, JsonSchema> {
  const byStatus = new Map<number, { codes: string[]; titles: string[] }>();
  for (const { status, code, title } of Object.values(ERROR_HTTP)) {
    const entry = byStatus.get(status) ?? { codes: [], titles: [] };
    entry.codes.push(code);
    entry.titles.push(title);
    byStatus.set(status, entry);
  }
  const when: Record<number, string> = {
    400: 'The body is not valid JSON or not a JSON object, `API-Version` names no release, or the request itself is malformed (a bad `Host`, a `#` in the target).',
    401: 'The bearer token is missing, malformed, unknown, expired or revoked.',
    403: 'The egg is visible to the caller, who is not its owner.',
    404: 'Nothing with this id, slug or number that the caller can see (an egg the caller cannot see is never revealed).',
    408: 'The request (headers and body) did not arrive within `HATCHERY_REQUEST_TIMEOUT_MS` (30 s by default); the connection is closed.',
    413: 'The body is larger than the gateway accepts (`HATCHERY_BODY_LIMIT_BYTES`, 1 MiB by default).',
    415: 'The body is not `application/json`.',
    422: 'A field is missing, of the wrong type, out of range or unknown (`validation_failed`), or a tier cap or count limit is reached (`limit_exceeded`). `errors` names each field.',
    429: 'Too many requests; retry after `Retry-After` seconds.',
    500: 'An unexpected error; `error_id` names it in the server log. Never a stack trace.',
    503: 'The database cannot be reached right now (`service_unavailable`); retry after `Retry-After` seconds.',
  };
  const out: Record<string, JsonSchema> = {};
  for (const [status, { codes, titles }] of byStatus) {
    const refine: JsonSchema = {
      type: 'object',
      properties: { status: { const: status }, code: codes.length === 1 ? { const: codes[0] } : { enum: codes } },
    };
    if (status === 422) Object.assign(refine, { required: ['errors'], properties: { ...(refine.properties as object), errors: { type: 'array', minItems: 1 } } });
    const headers: Record<string, JsonSchema> = {};
    if (status === 503) headers['Retry-After'] = { required: true, description: 'Seconds to wait.', schema: { type: 'integer', minimum: 0 } };
    if (status === 401) headers['WWW-Authenticate'] = { required: true, description: '`Bearer`', schema: { type: 'string', pattern: '^Bearer' } };
    if (status === 429) {
      headers['Retry-After'] = { required: true, description: 'Seconds to wait.', schema: { type: 'integer', minimum: 0 } };
      headers['RateLimit-Limit'] = { required: true, description: 'Requests allowed in the window (per token, or per IP without one).', schema: { type: 'integer', minimum: 1 } };
      headers['RateLimit-Remaining'] = { required: true, description: 'Requests left in the window: 0.', schema: { type: 'integer', minimum: 0 } };
      headers['RateLimit-Reset'] = { required: true, description: 'Seconds until the window ends.', schema: { type: 'integer', minimum: 1 } };
    }
    out[`Problem${status}`] = {
      description: `${titles.join(' / ')}: ${when[status] ?? ''}`.trim(),
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { 'application/problem+json': { schema: { allOf: [ref('Problem'), refine] } } },
    };
  }
  return out;
}

const INFO_DESCRIPTION = `The REST layer of Hatchery, a hosting platform whose apps are called eggs. Every endpoint
executes the same GraphQL operation a GraphQL client could send to \`/graphql\`; this document is
generated from the REST route table and the GraphQL schema.

- **Authentication:** \`Authorization: Bearer <token>\` on every request (tokens look like \`hatch_…\`).
- **Releases:** send \`API-Version: <release>\` (${API_RELEASES.map((r) => `\`${r}\``).join(', ')}) to pin one; none means
  the latest (\`${LATEST_RELEASE}\`). Responses echo the release used. Each operation names the release that introduced it.
- **Bodies:** JSON in and out, snake_case field names, lower-case enum values; timestamps are ISO 8601 UTC with milliseconds.
- **Lists:** \`{data, has_more, next_cursor}\`, newest first (log lines oldest first); pass \`cursor\` for the next page.
- **Errors:** RFC 9457 problem details (\`application/problem+json\`) with a stable \`code\`; every 422 names the fields at fault in \`errors\`.`;

export interface OpenApiOptions {
  /** Base URL for `servers`; default `/`, the host that serves the document. */
  serverUrl?: string;
}

/** The OpenAPI 3.1 document of every row of the route table. */
export function buildOpenApi(schema: GraphQLSchema, table: Route[] = routes, opts: OpenApiOptions = {}): OpenApiDocument {
  const g = new Gql(schema);
  const schemas: Record<string, JsonSchema> = sharedSchemas();
  for (const [name, build] of Object.entries(RESOURCES)) schemas[name] = build(g);

  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  for (const route of table) {
    const path = openApiPath(route.path);
    const method = route.method.toLowerCase();
    paths[path] ??= {};
    if (paths[path][method]) throw new Error(`OpenAPI: ${route.method} ${route.path} appears twice`);
    paths[path][method] = operation(g, route);
  }
  const tags = [...new Set(table.map(tagOf))].map((name) => ({ name }));

  return {
    openapi: '3.1.0',
    info: {
      title: 'Hatchery REST API',
      version: LATEST_RELEASE,
      description: INFO_DESCRIPTION,
      'x-hatchery-releases': [...API_RELEASES],
    },
    servers: [{ url: opts.serverUrl ?? '/', description: 'This gateway' }],
    security: [{ bearerAuth: [] }],
    tags,
    paths,
    components: {
      schemas,
      parameters: {
        ApiVersion: {
          name: 'API-Version',
          in: 'header',
          required: false,
          description: `The API release to use; none means the latest (\`${LATEST_RELEASE}\`). Anything else is a 400.`,
          schema: { type: 'string', enum: [...API_RELEASES], default: LATEST_RELEASE },
        },
      },
      headers: {
        ApiVersion: {
          description: 'The API release that answered.',
          required: true,
          schema: { type: 'string', enum: [...API_RELEASES] },
        },
      },
      responses: errorResponses(),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'hatch_…',
          description: 'An API token: from `admin create-user`, the `createApiToken` mutation or `hatch login`.',
        },
      },
    },
  };
}
