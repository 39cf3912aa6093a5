import { GraphQLSchema } from 'graphql';
import { JsonSchema, SchemaView, SHARED_SCHEMAS } from './json-schema';
import { OpenApiOperation, operation, openApiPath, tagOf } from './openapi.operations';
import { errorResponses, problemSchemas } from './openapi.problems';
import { RESPONSE_BODIES } from './resources';
import { API_RELEASES, LATEST_RELEASE, Route, routes } from './routes';
import { uploadOperation } from './openapi.uploads';
import { UploadRoute, uploads as uploadTable } from './uploads';

export type { JsonSchema } from './json-schema';
export type { OpenApiOperation } from './openapi.operations';

/**
 * The OpenAPI 3.1 document of the REST layer, generated from the route table and the GraphQL
 * schema: parameters and bodies come from each row's operation variables (openapi.operations.ts),
 * descriptions from the schema's field and argument descriptions, response bodies from the
 * resource declarations (resources.ts), errors from the one error table (openapi.problems.ts).
 */

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
  /** The binary uploads (uploads.ts) to describe; default all of them. */
  uploads?: UploadRoute[];
}

/** The OpenAPI 3.1 document of every row of the route table. */
export function buildOpenApi(schema: GraphQLSchema, table: Route[] = routes, opts: OpenApiOptions = {}): OpenApiDocument {
  const g = new SchemaView(schema);
  const schemas: Record<string, JsonSchema> = { ...SHARED_SCHEMAS, ...problemSchemas() };
  for (const body of RESPONSE_BODIES) schemas[body.name] = body.schema(g);

  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  for (const route of table) {
    const path = openApiPath(route.path);
    const method = route.method.toLowerCase();
    paths[path] ??= {};
    if (paths[path][method]) throw new Error(`OpenAPI: ${route.method} ${route.path} appears twice`);
    paths[path][method] = operation(g, route);
  }
  const responses = errorResponses();
  const uploads = opts.uploads ?? uploadTable;
  for (const upload of uploads) {
    const path = openApiPath(upload.path);
    paths[path] ??= {};
    const method = upload.method.toLowerCase();
    if (paths[path][method]) throw new Error(`OpenAPI: ${upload.method} ${upload.path} appears twice`);
    paths[path][method] = uploadOperation(upload, responses);
  }
  const tags = [...new Set([...table, ...uploads].map(tagOf))].map((name) => ({ name }));

  const missing = [...JSON.stringify({ schemas, paths }).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]).filter((n) => !schemas[n]);
  if (missing.length) throw new Error(`OpenAPI: no schema ${[...new Set(missing)].join(', ')}; list each response body in RESPONSE_BODIES`);

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
      responses,
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
