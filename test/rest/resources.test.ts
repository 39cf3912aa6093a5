import { parse, validate } from 'graphql';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { defineList, defineResource, Resource } from '../../src/rest/define-resource';
import { SchemaView } from '../../src/rest/json-schema';
import { buildOpenApi } from '../../src/rest/openapi';
import { CreatedWebhook, Cron, Deployment, DeploymentList, RESPONSE_BODIES, Webhook } from '../../src/rest/resources';
import { Route, routes } from '../../src/rest/routes';

/** One declaration per REST resource gives its fragment, its presenter and its OpenAPI schema. */
const schema = buildGatewaySchema();
const view = new SchemaView(schema);

describe('a resource declaration', () => {
  it('selects every field it presents, nested objects inside their field', () => {
    expect(Deployment.fragment).toBe(
      'fragment RestDeployment on Deployment { id app { slug } status url createdAt updatedAt finishedAt memoryMb volumeMb envKeys source image failureReason }',
    );
    expect(Cron.selection).toBe('id schedule command enabled createdAt nextRunAt lastRun { id status exitCode scheduledAt startedAt finishedAt }');
    expect(CreatedWebhook.selection).toBe('webhook { id url events active createdAt } secret');
  });

  it('every fragment is valid against the schema', () => {
    for (const body of RESPONSE_BODIES) {
      if (body.kind !== 'resource') continue;
      const document = parse(`query Probe { __typename } ${body.fragment}`);
      const problems = validate(schema, document).filter((p) => !/is never used/.test(p.message));
      expect([body.name, problems.map((p) => p.message)]).toEqual([body.name, []]);
    }
  });

  it('presents snake_case fields in declaration order: enums lower case, paths followed, nested resources presented or null', () => {
    const run = { id: 'run_1', status: 'SUCCEEDED', exitCode: 0, scheduledAt: 'a', startedAt: 'b', finishedAt: 'c' };
    const cron = { id: 'cron_1', schedule: '* * * * *', command: 'x', enabled: true, createdAt: 't', nextRunAt: null };
    expect(JSON.stringify(Cron.present({ ...cron, lastRun: run }))).toBe(
      JSON.stringify({
        id: 'cron_1',
        schedule: '* * * * *',
        command: 'x',
        enabled: true,
        created_at: 't',
        next_run_at: null,
        last_run: { id: 'run_1', status: 'succeeded', exit_code: 0, scheduled_at: 'a', started_at: 'b', finished_at: 'c' },
      }),
    );
    expect(Cron.present({ ...cron, lastRun: null }).last_run).toBeNull();
    expect(CreatedWebhook.present({ secret: 'whsec_x', webhook: { id: 'wh_1', url: 'u', events: ['deploy'], active: true, createdAt: 't' } })).toEqual({
      id: 'wh_1',
      url: 'u',
      events: ['deploy'],
      active: true,
      secret: 'whsec_x',
      created_at: 't',
    });
    expect(Webhook.present({ id: 'wh_1', url: 'u', events: [], active: false, createdAt: 't', lastDelivery: null }).last_delivery).toBeNull();
  });

  it('lists present a connection or a plain list as {data, has_more, next_cursor}', () => {
    const node = { id: 'dep_1', app: { slug: 'egg' }, status: 'LIVE', envKeys: [] };
    const page = (hasNextPage: boolean) => ({ nodes: [node], pageInfo: { hasNextPage, endCursor: 'c1' } });
    expect(DeploymentList.present(page(true))).toMatchObject({ data: [{ id: 'dep_1', project: 'egg', status: 'live' }], has_more: true, next_cursor: 'c1' });
    expect(DeploymentList.present(page(false))).toMatchObject({ has_more: false, next_cursor: null });
    expect(DeploymentList.present([node])).toMatchObject({ data: [{ project: 'egg' }], has_more: false, next_cursor: null });
  });

  it('its schema has the presented fields, all required, and nothing else', () => {
    for (const body of RESPONSE_BODIES) {
      if (body.kind !== 'resource') continue;
      const json = body.schema(view);
      expect([body.name, json.required]).toEqual([body.name, Object.keys(body.fields)]);
      expect(Object.keys(json.properties as object)).toEqual(Object.keys(body.fields));
      expect(json.additionalProperties).toBe(false);
    }
    expect(Cron.schema(view).properties).toMatchObject({ last_run: { anyOf: [{ $ref: '#/components/schemas/CronRun' }, { type: 'null' }] } });
  });

  it('refuses an enum not declared `enum: true`, and `enum: true` on a field that is none', () => {
    const forgot = defineResource({ name: 'Forgot', graphqlType: 'Volume', fields: { status: 'status' } });
    expect(() => forgot.schema(view)).toThrow(/Forgot: status \(status\) must be declared `enum: true`/);
    const wrong = defineResource({ name: 'Wrong', graphqlType: 'Volume', fields: { mount: { from: 'mount', enum: true } } });
    expect(() => wrong.schema(view)).toThrow(/Wrong: mount \(mount\) must not be declared/);
    const unknown = defineResource({ name: 'Unknown', graphqlType: 'Volume', fields: { size_gb: 'sizeGb' } });
    expect(() => unknown.schema(view)).toThrow(/Volume\.sizeGb does not exist/);
  });

  it('a route answering with a body missing from RESPONSE_BODIES fails the document', () => {
    const Unlisted: Resource = defineResource({ name: 'Unlisted', graphqlType: 'Volume', fields: { size_mb: 'sizeMb' } });
    const row: Route = { ...routes.find((r) => r.path === '/v1/apps/:slug/volume' && r.method === 'GET')! };
    row.response = { body: defineList(Unlisted), of: (d) => d.volume };
    expect(() => buildOpenApi(schema, [row])).toThrow(/no schema UnlistedList.*RESPONSE_BODIES/);
  });
});
