import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { buildOpenApi, JsonSchema, OpenApiDocument, OpenApiOperation } from '../../src/rest/openapi';
import { API_RELEASES, LATEST_RELEASE, Route, routes } from '../../src/rest/routes';
import { uploads } from '../../src/rest/uploads';
import { startGateway, TestGateway } from '../support/gateway';

const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');
const operationOf = (doc: OpenApiDocument, route: Route): OpenApiOperation => doc.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
const rowKey = (r: Route) => `${r.method} ${r.path}`;

function resolve(doc: OpenApiDocument, obj: JsonSchema): JsonSchema {
  const target = obj.$ref;
  if (typeof target !== 'string') return obj;
  const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(target)!;
  return resolve(doc, (doc.components as Record<string, Record<string, JsonSchema>>)[section][name]);
}

const parameters = (doc: OpenApiDocument, op: OpenApiOperation) => op.parameters.map((p) => resolve(doc, p));
const bodySchema = (op: OpenApiOperation) =>
  (op.requestBody as { content: Record<string, { schema: JsonSchema }> } | undefined)?.content['application/json'].schema;

describe('GET /openapi.json', () => {
  let t: TestGateway;
  let doc: OpenApiDocument;

  beforeAll(async () => {
    t = await startGateway();
    const res = await fetch(`${t.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as OpenApiDocument;
  });
  afterAll(() => t.stop());

  it('needs no token and is the generator’s document', async () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(buildOpenApi(buildGatewaySchema()))));
    const withBadToken = await fetch(`${t.url}/openapi.json`, { headers: { authorization: 'Bearer hatch_nope' } });
    expect(withBadToken.status).toBe(200);
  });

  it('is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it('swagger-parser rejects a broken copy, so the check above can fail', async () => {
    const broken = structuredClone(doc);
    broken.paths['/deploy'].post.parameters.push({ name: 'project', in: 'body', schema: { type: 'string' } });
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow(/schema validation failed/);
  });

  it('declares every path template parameter, unique operation ids, and only existing required properties', () => {
    const ids = new Set<string>();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const op of Object.values(methods)) {
        expect(ids.has(op.operationId)).toBe(false);
        ids.add(op.operationId);
        const declared = parameters(doc, op)
          .filter((p) => p.in === 'path')
          .map((p) => p.name)
          .sort();
        expect(declared).toEqual([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort());
      }
    }
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      for (const field of (schema.required ?? []) as string[])
        expect(`${name}.${field} ${field in (schema.properties as object)}`).toBe(`${name}.${field} true`);
    }
  });

  it('has component schemas that compile as JSON Schema 2020-12 in strict mode', () => {
    const ajv = new Ajv2020({ strict: true });
    addFormats(ajv);
    ajv.addKeyword('components');
    ajv.addSchema({ $id: 'https://x/doc', components: doc.components });
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`https://x/doc#/components/schemas/${name}`)).not.toThrow();
    }
  });

  it('describes every route row: method, path, parameters, body fields, statuses, release', () => {
    const documented = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
    expect(documented).toBe(routes.length + uploads.length);
    for (const route of routes) {
      const op = operationOf(doc, route);
      expect(op ? rowKey(route) : `${rowKey(route)} missing`).toBe(rowKey(route));
      expect(op.summary).toBe(route.summary);
      expect(op['x-hatchery-since']).toBe(route.since);
      expect(op.description).toContain(`\`${route.since}\``);
      const params = parameters(doc, op);
      expect(params.filter((p) => p.in === 'path').map((p) => p.name)).toEqual([...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]));
      expect(params.filter((p) => p.in === 'path').every((p) => p.required === true)).toBe(true);
      expect(params.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(route.query ?? []);
      expect(params.filter((p) => p.in === 'header').map((p) => p.name)).toEqual([...(route.headers ?? []), 'API-Version']);
      if (route.body) expect(Object.keys(bodySchema(op)!.properties as object)).toEqual(Object.keys(route.body));
      else expect(op.requestBody).toBeUndefined();

      const success = Object.keys(op.responses).filter((s) => s < '300');
      const expected = route.statuses ? Object.keys(route.statuses) : [String(route.status)];
      expect(success.sort()).toEqual(expected.sort());
      for (const status of success) {
        const response = op.responses[status] as { content?: Record<string, { schema: JsonSchema }> };
        if (status === '204') expect(response.content).toBeUndefined();
        else expect(response.content!['application/json'].schema).toEqual({ $ref: `#/components/schemas/${route.response!.body.name}` });
      }
      const errors = Object.keys(op.responses).filter((s) => s >= '400');
      expect(errors).toEqual(expect.arrayContaining(['400', '401', '404', '422', '429', '500']));
      expect(errors.includes('415')).toBe(route.body !== undefined);
      expect(errors.includes('403')).toBe(route.ownerOnly === true);
    }
  });

  it('describes each binary upload: its media type as the body, its statuses, and the GraphQL query that reads what it stored', () => {
    expect(uploads.map((u) => `${u.method} ${u.path}`)).toEqual(['POST /v1/apps/:slug/sources']);
    for (const upload of uploads) {
      const op = doc.paths[openApiPath(upload.path)][upload.method.toLowerCase()];
      expect(op.summary).toBe(upload.summary);
      expect(op['x-hatchery-since']).toBe(upload.since);
      expect(op['x-graphql-operation']).toBe('RestSource');
      expect(op.description).toMatch(/No GraphQL twin: GraphQL has no binary upload\. GraphQL reads what it stored: `query \{ source \}`/);
      expect(op.tags).toEqual(['Sources']);
      const params = parameters(doc, op);
      expect(params.map((p) => [p.name, p.in])).toEqual([
        ['slug', 'path'],
        ['API-Version', 'header'],
      ]);
      expect(op.requestBody).toMatchObject({
        required: true,
        content: { 'application/gzip': { schema: { type: 'string', contentMediaType: 'application/gzip' } } },
      });
      expect(Object.keys((op.requestBody as { content: object }).content)).toEqual(['application/gzip']);
      for (const status of ['200', '201'])
        expect((op.responses[status] as { content: Record<string, { schema: JsonSchema }> }).content['application/json'].schema).toEqual({
          $ref: '#/components/schemas/Source',
        });
      expect(Object.keys(op.responses).sort()).toEqual(['200', '201', '400', '401', '404', '408', '413', '415', '422', '429', '500', '503']);
      expect(resolve(doc, op.responses['413']).description).toMatch(/HATCHERY_SOURCE_MAX_MB/);
      expect(resolve(doc, op.responses['415']).description).toMatch(/magic bytes/);
    }
    expect(doc.components.schemas.Source).toMatchObject({ required: ['id', 'sha256', 'size_bytes', 'created_at'], additionalProperties: false });
  });

  it('derives bodies and parameters from the GraphQL input types', () => {
    const byKey = new Map(routes.map((r) => [rowKey(r), operationOf(doc, r)]));
    const deploy = bodySchema(byKey.get('POST /deploy')!)!;
    expect(deploy).toMatchObject({
      type: 'object',
      required: ['project'],
      additionalProperties: false,
      properties: { project: { type: 'string' }, env: { type: ['object', 'null'] } },
    });
    expect((byKey.get('POST /deploy')!.requestBody as { required: boolean }).required).toBe(true);
    expect(bodySchema(byKey.get('POST /v1/apps/:slug/webhooks')!)!.properties).toMatchObject({
      url: { type: 'string' },
      events: { type: 'array', items: { type: 'string' } },
    });
    expect(bodySchema(byKey.get('PATCH /apps/:slug/resources')!)!.properties).toMatchObject({ memory_mb: { type: ['integer', 'null'] } });
    const checkout = byKey.get('POST /billing/energy-pack/checkout')!;
    expect(checkout.requestBody).toMatchObject({ required: false });
    expect(bodySchema(checkout)).toMatchObject({ properties: {}, additionalProperties: false });

    const list = Object.fromEntries(parameters(doc, byKey.get('GET /deployments')!).map((p) => [p.name, p]));
    expect(list.status.schema).toEqual({ type: 'string', enum: ['building', 'live', 'failed'] });
    expect(list.limit.schema).toMatchObject({ type: 'integer' });
    expect(list.limit.description).toMatch(/1 to 100/);
    const logs = Object.fromEntries(parameters(doc, byKey.get('GET /deployments/:id/logs')!).map((p) => [p.name, p]));
    expect(logs.type.schema).toEqual({ type: 'string', enum: ['build', 'runtime'] });
    expect(logs.since.schema).toMatchObject({ type: 'string', format: 'date-time' });
    const pr = parameters(doc, byKey.get('DELETE /v1/apps/:slug/previews/:pr')!).find((p) => p.name === 'pr')!;
    expect(pr.schema).toMatchObject({ type: 'integer' });
    const volumeDelete = parameters(doc, byKey.get('DELETE /v1/apps/:slug/volume')!).find((p) => p.name === 'now')!;
    expect(volumeDelete).toMatchObject({ in: 'query', required: false, schema: { type: 'boolean' } });
    expect(parameters(doc, byKey.get('POST /deploy')!).find((p) => p.name === 'Idempotency-Key')).toMatchObject({ in: 'header', schema: { type: 'string' } });
  });

  it('documents bearer auth on every operation, the releases, and problem+json errors', () => {
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const methods of Object.values(doc.paths)) {
      for (const op of Object.values(methods)) {
        expect((op as { security?: unknown }).security).toBeUndefined();
        const version = parameters(doc, op).find((p) => p.name === 'API-Version')!;
        expect(version).toMatchObject({ in: 'header', required: false, schema: { enum: [...API_RELEASES], default: LATEST_RELEASE } });
        for (const [status, response] of Object.entries(op.responses)) {
          if (status < '400') continue;
          const content = resolve(doc, response).content as Record<string, unknown>;
          expect(Object.keys(content)).toEqual(['application/problem+json']);
        }
      }
    }
    expect(doc.info.version).toBe(LATEST_RELEASE);
    expect(doc.components.schemas.Problem).toMatchObject({ required: ['type', 'title', 'status', 'code', 'detail', 'request_id'] });
    expect(resolve(doc, { $ref: '#/components/responses/Problem401' }).headers).toHaveProperty('WWW-Authenticate');
    expect(resolve(doc, { $ref: '#/components/responses/Problem429' }).headers).toHaveProperty('Retry-After');
    const later = routes.filter((r) => r.since !== API_RELEASES[0]);
    expect(later.map(rowKey).sort()).toEqual([
      'DELETE /v1/apps/:slug/log-drains/:id',
      'GET /v1/apps/:slug/log-drains',
      'GET /v1/apps/:slug/logs',
      'PATCH /apps/:slug/resources',
      'POST /billing/energy-pack/checkout',
      'POST /v1/apps/:slug/crons/:id/runs/:run/cancel',
      'POST /v1/apps/:slug/log-drains',
    ]);
    for (const r of later) expect(operationOf(doc, r).description).toMatch(/earlier API release.*404/);
  });
});

describe('the generator refuses rows it cannot describe', () => {
  const schema = buildGatewaySchema();
  const row = (over: Partial<Route>): Route => ({ ...routes.find((r) => r.path === '/v1/apps/:slug/volume' && r.method === 'POST')!, ...over });

  it('a status function without `statuses`', () => {
    expect(() => buildOpenApi(schema, [row({ statuses: undefined })])).toThrow(/statuses/);
  });
  it('a body answer without a `response` schema', () => {
    expect(() => buildOpenApi(schema, [row({ response: undefined })])).toThrow(/response/);
  });
  it('a query parameter that feeds no variable', () => {
    expect(() => buildOpenApi(schema, [row({ query: ['verbose'] })])).toThrow(/verbose/);
  });
  it('a body field the input type lacks', () => {
    expect(() => buildOpenApi(schema, [row({ body: { size_gb: 'sizeGb' } })])).toThrow(/sizeGb/);
  });
});
