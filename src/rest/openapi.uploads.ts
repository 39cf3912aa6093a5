import { Kind, OperationDefinitionNode, parse } from 'graphql';
import { JsonSchema, ref } from './json-schema';
import { OpenApiOperation, tagOf } from './openapi.operations';
import { API_RELEASES } from './routes';
import { UploadRoute } from './uploads';

/** Error statuses an upload answers, and what each means there when it differs from the table routes'. */
const UPLOAD_ERRORS: Record<number, string | null> = {
  400: null,
  401: null,
  404: null,
  408: 'The body did not arrive whole within `HATCHERY_REQUEST_TIMEOUT_MS` (30 s by default); the connection is closed and nothing is stored.',
  413: 'The body is larger than `HATCHERY_SOURCE_MAX_MB` (sent with a larger `Content-Length`, or counted as it arrives); nothing is stored.',
  415: 'The body is not sent as the endpoint’s media type, or its bytes are not of that type (gzip’s magic bytes); nothing is stored.',
  422: 'The archive is refused (`validation_failed` on the body’s field: what is wrong with it), or a query parameter is unknown; nothing is stored.',
  429: 'Too many requests, or this gateway is storing as many uploads as it takes at once; retry after `Retry-After` seconds.',
  500: null,
  503: null,
};

/** The OpenAPI operation of a binary upload (uploads.ts): its body is the media type, not JSON. */
export function uploadOperation(route: UploadRoute, problems: Record<string, JsonSchema>): OpenApiOperation {
  const reader = parse(route.reader).definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (!reader?.name) throw new Error(`REST ${route.method} ${route.path}: the reader operation needs a name`);
  const readerField = reader.selectionSet.selections.find((s) => s.kind === Kind.FIELD);
  const readerName = readerField?.kind === Kind.FIELD ? readerField.name.value : '';
  const headers = { 'API-Version': { $ref: '#/components/headers/ApiVersion' } };
  const responses: Record<string, JsonSchema> = {};
  for (const [status, description] of Object.entries(route.statuses)) {
    responses[status] = { description, headers, content: { 'application/json': { schema: ref(route.response.name) } } };
  }
  for (const [status, description] of Object.entries(UPLOAD_ERRORS)) {
    const shared = problems[`Problem${status}`];
    if (!shared) throw new Error(`OpenAPI: no Problem${status} response`);
    responses[status] = description === null ? { $ref: `#/components/responses/Problem${status}` } : { ...shared, description };
  }
  const since = route.since === API_RELEASES[0] ? '' : ` Pinned to an earlier API release (\`API-Version\`), it answers 404.`;
  return {
    operationId: `upload${route.response.name}`,
    summary: route.summary,
    description:
      `${route.description}\n\n` +
      `Available since API release \`${route.since}\`.${since} ` +
      `No GraphQL twin: GraphQL has no binary upload. GraphQL reads what it stored: \`query { ${readerName} }\`.`,
    tags: [tagOf(route)],
    'x-hatchery-since': route.since,
    'x-graphql-operation': reader.name.value,
    parameters: [
      ...[...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
        name,
        in: 'path',
        required: true,
        description: name === 'slug' ? 'The egg’s slug.' : name,
        schema: { type: 'string' },
      })),
      { $ref: '#/components/parameters/ApiVersion' },
    ],
    requestBody: {
      required: true,
      description: route.bodyDescription,
      content: { [route.mediaType]: { schema: { type: 'string', contentMediaType: route.mediaType } } },
    },
    responses,
  };
}
