import { buildGatewaySchema } from '../../src/graphql/schema';
import { buildOpenApi, JsonSchema, OpenApiDocument } from '../../src/rest/openapi';
import { gql, rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { CreateWebhookDocument } from '../../src/client/generated';
import { expectInvalid } from './problem';

/**
 * Issue 12, item 8: REST bodies and query strings follow their OpenAPI schema strictly. GraphQL
 * coerces a single value to a one-item list; REST JSON does not: `events: "deploy"` is a 422
 * naming `events`, not `["deploy"]`. Every array field of the OpenAPI document is tried.
 */
interface ArrayField {
  method: string;
  path: string;
  where: 'body' | 'query';
  name: string;
  items: JsonSchema;
}

function resolve(doc: OpenApiDocument, obj: JsonSchema): JsonSchema {
  const target = obj.$ref;
  if (typeof target !== 'string') return obj;
  const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(target)!;
  return resolve(doc, (doc.components as Record<string, Record<string, JsonSchema>>)[section][name]);
}

const isArray = (s: JsonSchema) => s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'));

function arrayFields(doc: OpenApiDocument): ArrayField[] {
  const found: ArrayField[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const p of op.parameters.map((x) => resolve(doc, x))) {
        const schema = p.schema as JsonSchema;
        if (p.in === 'query' && isArray(schema)) found.push({ method, path, where: 'query', name: p.name as string, items: schema.items as JsonSchema });
      }
      const body = (op.requestBody as { content: Record<string, { schema: JsonSchema }> } | undefined)?.content['application/json']?.schema;
      for (const [name, prop] of Object.entries((body?.properties ?? {}) as Record<string, JsonSchema>)) {
        if (isArray(prop)) found.push({ method, path, where: 'body', name, items: prop.items as JsonSchema });
      }
    }
  }
  return found;
}

/** One valid item of an array's items schema. */
function item(items: JsonSchema): unknown {
  if (Array.isArray(items.enum)) return items.enum.find((v) => v !== null);
  const type = Array.isArray(items.type) ? items.type.find((x) => x !== 'null') : items.type;
  return type === 'integer' || type === 'number' ? 1 : type === 'boolean' ? true : 'deploy';
}

describe('REST array fields take arrays only', () => {
  const fields = arrayFields(buildOpenApi(buildGatewaySchema()));
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_WORKER: 'off' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  const storedWebhooks = async (): Promise<number> => {
    const [row] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM webhooks w JOIN apps a ON a.id = w.app_id WHERE a.slug = $1', [slug]);
    return row.n;
  };

  it('the OpenAPI document has array fields to try (POST …/webhooks `events` among them)', () => {
    expect(fields).toContainEqual(expect.objectContaining({ method: 'post', path: '/v1/apps/{slug}/webhooks', where: 'body', name: 'events' }));
  });

  it.each(fields.map((f) => [`${f.method.toUpperCase()} ${f.path}`, f.where, f.name, f] as const))(
    '%s: a single value for the %s field %s → 422 naming it; an array of it is not refused on that field',
    async (_op, _where, name, f) => {
      const url = f.path.replace(/\{(\w+)\}/g, (_m, p: string) => (p === 'slug' ? slug : 'x'));
      const one = item(f.items);
      const send = (value: unknown) =>
        f.where === 'body'
          ? rest(t.url, owner.token, f.method.toUpperCase(), url, { [name]: value })
          : rest(t.url, owner.token, f.method.toUpperCase(), `${url}?${new URLSearchParams({ [name]: String(value) }).toString()}`);
      const single = await send(one);
      expectInvalid(single, name);
      expect(single.body.errors).toContainEqual({ field: name, message: 'must be an array' });
      if (f.where === 'body') {
        const list = await send([one]);
        expect((list.body.errors ?? []).map((e: { field: string }) => e.field)).not.toContain(name);
      }
    },
  );

  it('POST …/webhooks with events: "deploy" (a string) → 422 naming events, nothing stored; ["deploy"] → 201', async () => {
    const url = 'https://93.184.216.34/hook';
    const res = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, { url, events: 'deploy' });
    expectInvalid(res, 'events');
    expect(res.body.errors).toEqual([{ field: 'events', message: 'must be an array' }]);
    expect(await storedWebhooks()).toBe(0);

    const ok = await rest(t.url, owner.token, 'POST', `/v1/apps/${slug}/webhooks`, { url, events: ['deploy'] });
    expect(ok.status).toBe(201);
    expect(ok.body.events).toEqual(['deploy']);
    expect(await storedWebhooks()).toBe(1);
  });

  it('GraphQL keeps its own input coercion: a single value for a list variable is a one-item list', async () => {
    const res = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url: 'https://93.184.216.35/hook', events: 'deploy' as unknown as string[] });
    expect(res.errors).toBeUndefined();
    expect(res.data?.createWebhook.webhook.events).toEqual(['deploy']);
  });
});
