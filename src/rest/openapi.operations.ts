import {
  DocumentNode,
  getNullableType,
  GraphQLField,
  GraphQLInputObjectType,
  GraphQLInputType,
  isNonNullType,
  Kind,
  OperationDefinitionNode,
  parse,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import { JsonSchema, nullable, ref, SchemaView } from './json-schema';
import { API_RELEASES, Route } from './routes';

/** One row of the route table as an OpenAPI operation: parameters and body from its operation's variables. */

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

interface OperationShape {
  /** Each `$variable`'s argument description. */
  variables: Map<string, string | null | undefined>;
  /** The field the endpoint is about: the innermost one taking variables (else the root field). */
  field: GraphQLField<unknown, unknown>;
  /** Its path from the root, e.g. `deployment { logs }`. */
  path: string[];
}

function operationShape(g: SchemaView, document: DocumentNode): OperationShape {
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
          if (def && (!target || node.arguments?.some((a) => a.value.kind === Kind.VARIABLE))) target = { field: def, path: [...stack] };
        },
        leave() {
          stack.pop();
        },
      },
      Argument(node) {
        const arg = typeInfo.getArgument();
        if (node.value.kind === Kind.VARIABLE && arg && !variables.has(node.value.name.value)) variables.set(node.value.name.value, arg.description);
      },
    }),
  );
  if (!target) throw new Error('OpenAPI: an operation without fields');
  return { variables, ...target };
}

const TAGS: Record<string, string> = {
  deploy: 'Deployments',
  deployments: 'Deployments',
  logs: 'Deployments',
  resources: 'Resources',
  volume: 'Volumes',
  previews: 'Previews',
  billing: 'Billing',
  crons: 'Crons',
  webhooks: 'Webhooks',
  'log-drains': 'Log drains',
  sources: 'Sources',
};

export function tagOf(route: Pick<Route, 'path'>): string {
  const first = route.path
    .replace(/^\/v1/, '')
    .replace(/^\/apps\/:slug/, '')
    .split('/')[1];
  const tag = TAGS[first];
  if (!tag) throw new Error(`OpenAPI: no tag for ${route.path}`);
  return tag;
}

export const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

const STATUS_TEXT: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'Deleted; no body' };

/** Error statuses every table route can answer, and when a row adds more. */
function errorStatuses(route: Route): number[] {
  const statuses = [400, 401, 404, 408, 422, 429, 500, 503];
  if (route.body) statuses.push(413, 415);
  if (route.ownerOnly) statuses.push(403);
  return statuses.sort((a, b) => a - b);
}

export function operation(g: SchemaView, route: Route): OpenApiOperation {
  const where = `REST ${route.method} ${route.path}`;
  const document = parse(route.operation);
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (!op?.name) throw new Error(`${where}: the operation needs a name`);
  const variables = new Map((op.variableDefinitions ?? []).map((v) => [v.variable.name.value, typeFromAST(g.schema, v.type as never) as GraphQLInputType]));
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
    if (!route.response) throw new Error(`${where}: a row answering ${status} names its \`response\``);
    responses[status] = { description, headers, content: { 'application/json': { schema: ref(route.response.body.name) } } };
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
