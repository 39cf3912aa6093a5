import { Writable } from 'node:stream';
import { QueryFailedError } from 'typeorm';
import { AppsDocument, CreateApiTokenDocument, DeploymentDocument, DeploymentStatusDocument, ViewerDocument } from '../../src/client/generated';
import { createLogger } from '../../src/log';
import { collect, gql, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';

/** Every line a logger writes, as written and parsed. */
class Captured {
  readonly raw: string[] = [];
  readonly stream = new Writable({
    write: (chunk, _encoding, done) => {
      this.raw.push(String(chunk));
      done();
    },
  });

  get text(): string {
    return this.raw.join('');
  }

  get lines(): Array<Record<string, any>> {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }
}

const REQ_ID = /^req_[0-9a-f]{20}$/;

describe('structured logs', () => {
  const log = new Captured();
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, { logger: createLogger('info', log.stream) });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  it('every GraphQL error names its request, over HTTP and graphql-ws, with the id of its log lines', async () => {
    const missing = 'dep_00000000000000000000000000';
    const http = await gql(t.url, owner.token, DeploymentDocument, { id: missing });
    const requestId = http.errors?.[0]?.extensions?.requestId as string;
    expect(http.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(requestId).toMatch(REQ_ID);
    expect(log.lines.filter((l) => l.reqId === requestId).map((l) => l.msg)).toEqual(['request completed']);

    const client = wsClient(t.url, owner.token);
    try {
      const stream = collect(client, DeploymentStatusDocument, { id: missing });
      await stream.done.catch(() => undefined);
      expect(stream.errors).toEqual([
        expect.objectContaining({ extensions: expect.objectContaining({ code: 'NOT_FOUND', requestId: expect.stringMatching(REQ_ID) }) }),
      ]);
    } finally {
      await client.dispose();
    }
  });

  it('are one JSON object per line, and every line about a request carries the request id its error body names', async () => {
    const missing = await rest(t.url, owner.token, 'GET', '/deployments/dep_00000000000000000000000000');
    expect(missing.status).toBe(404);
    expect(missing.body.request_id).toMatch(REQ_ID);
    await gqlOk(t.url, owner.token, ViewerDocument);

    const lines = log.lines; // throws unless every line is JSON
    const mine = lines.filter((l) => l.reqId === missing.body.request_id);
    // One access line a request, once answered: what was asked, the status, the time taken.
    expect(mine.map((l) => l.msg)).toEqual(['request completed']);
    expect(mine[0]).toMatchObject({
      level: 30,
      req: { method: 'GET', url: '/deployments/dep_00000000000000000000000000', remoteAddress: '127.0.0.1' },
      res: { statusCode: 404 },
      responseTime: expect.any(Number),
    });

    const aboutRequests = lines.filter((l) => l.req || l.res);
    expect(aboutRequests.length).toBeGreaterThanOrEqual(4);
    for (const l of aboutRequests) expect(l.reqId).toMatch(REQ_ID);
    // Each request has its own id.
    const ids = new Set(aboutRequests.filter((l) => l.msg === 'request completed').map((l) => l.reqId));
    expect(ids.size).toBe(aboutRequests.filter((l) => l.msg === 'request completed').length);
  });

  it('ties a masked internal error to its request: the body names the request and the error, the log line has both', async () => {
    // A real failure inside the request: the table the query needs is gone for a moment.
    await t.gateway.ds.query('ALTER TABLE apps RENAME TO apps_hidden');
    let graphql, restRes;
    try {
      graphql = await gql(t.url, owner.token, AppsDocument, {});
      restRes = await rest(t.url, owner.token, 'GET', `/deployments?project=${slug}`);
    } finally {
      await t.gateway.ds.query('ALTER TABLE apps_hidden RENAME TO apps');
    }

    expect(graphql.errors).toHaveLength(1);
    const [error] = graphql.errors!;
    expect(error.message).toBe('internal error');
    expect(error.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR', errorId: expect.stringMatching(/^err_/), requestId: expect.stringMatching(REQ_ID) });
    expect(JSON.stringify(graphql)).not.toMatch(/apps_hidden|relation|SELECT|at /);
    const gqlLine = log.lines.find((l) => l.errorId === error.extensions!.errorId)!;
    expect(gqlLine).toMatchObject({ level: 50, reqId: error.extensions!.requestId, err: { message: expect.stringMatching(/relation "apps" does not exist/) } });
    expect(log.lines.filter((l) => l.reqId === error.extensions!.requestId).map((l) => l.msg)).toEqual(['unexpected error', 'request completed']);

    expect(restRes.status).toBe(500);
    expect(restRes.body).toMatchObject({ code: 'internal_error', request_id: expect.stringMatching(REQ_ID), error_id: expect.stringMatching(/^err_/) });
    const restLine = log.lines.find((l) => l.errorId === restRes.body.error_id)!;
    expect(restLine).toMatchObject({ level: 50, reqId: restRes.body.request_id });
    // The failed statement is logged, its parameters (ids, hashes, emails) are not.
    expect(restLine.err.query).toMatch(/FROM "apps"/);
    expect(restLine.err.parameters).toBe('[redacted]');
    expect(log.text).not.toContain(owner.id);
  });

  it('over graphql-ws, a masked internal error names the connection’s request id, as its log line does', async () => {
    const client = wsClient(t.url, owner.token);
    await t.gateway.ds.query('ALTER TABLE deployments RENAME TO deployments_hidden');
    let stream;
    try {
      stream = collect(client, DeploymentStatusDocument, { id: 'dep_00000000000000000000000000' });
      await stream.done;
    } finally {
      await t.gateway.ds.query('ALTER TABLE deployments_hidden RENAME TO deployments');
      await client.dispose();
    }
    expect(stream.errors).toHaveLength(1);
    const error = stream.errors[0] as { message: string; extensions: Record<string, string> };
    expect(error.message).toBe('internal error');
    expect(error.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR', errorId: expect.stringMatching(/^err_/), requestId: expect.stringMatching(REQ_ID) });
    expect(log.lines.find((l) => l.errorId === error.extensions.errorId)).toMatchObject({
      level: 50,
      reqId: error.extensions.requestId,
      msg: 'unexpected error',
    });
  });

  it('never contain a bearer token, a new token, a webhook secret or a deploy env value', async () => {
    const bogus = 'hatch_bogus0123456789abcdefghijklmnop';
    expect((await rest(t.url, bogus, 'GET', '/deployments')).status).toBe(401);
    expect((await gql(t.url, bogus, ViewerDocument)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const created = await gqlOk(t.url, owner.token, CreateApiTokenDocument, { name: 'ci' });
    const fresh = created.createApiToken.token;
    expect(fresh).toMatch(/^hatch_/);
    const hook = await rest(t.url, fresh, 'POST', `/v1/apps/${slug}/webhooks`, { url: 'https://127.0.0.1:9/hook', events: ['deploy'] });
    expect(hook.status).toBe(201);
    const d = await deploy(t.url, owner, slug, { DATABASE_PASSWORD: 'pw-very-secret-value-42' });
    // graphql-ws sends the token in connection_init.
    const client = wsClient(t.url, fresh);
    try {
      const status = collect(client, DeploymentStatusDocument, { id: d.id });
      await status.waitFor(1);
    } finally {
      await client.dispose();
    }
    expect(await settle(t.url, owner, d.id)).not.toBe('BUILDING');

    expect(log.lines.length).toBeGreaterThan(10);
    for (const secret of [owner.token, bogus, fresh, hook.body.secret, 'pw-very-secret-value-42']) {
      expect(secret.length).toBeGreaterThan(10);
      expect(log.text).not.toContain(secret);
    }
  });
});

describe('the log redaction', () => {
  it('censors credentials wherever a log call puts them', () => {
    const out = new Captured();
    const logger = createLogger('info', out.stream);
    const err = new QueryFailedError('SELECT 1 WHERE x = $1', ['hatch_param_secret'], new Error('boom'));
    logger.info(
      {
        req: { method: 'GET', headers: { authorization: 'Bearer hatch_header_secret', cookie: 'sid=cookie_secret', 'stripe-signature': 't=1,v1=sig_secret' } },
      },
      'request',
    );
    logger.info({ headers: { authorization: 'Bearer hatch_bare_header_secret' } }, 'headers');
    logger.info({ token: 'hatch_top_secret', secret: 'whsec_top_secret', password: 'pw_top_secret' }, 'top level');
    logger.info(
      { user: { token: 'hatch_nested_secret' }, webhook: { secret: 'whsec_nested_secret' }, params: { authorization: 'Bearer nested_auth_secret' } },
      'nested',
    );
    logger.info({ connectionParams: { authorization: 'Bearer ws_secret' } }, 'ws');
    logger.error({ err }, 'failed');
    logger.child({ reqId: 'req_x' }).info({ token: 'hatch_child_secret' }, 'child');

    expect(out.lines).toHaveLength(7);
    expect(out.text).not.toMatch(/_secret/);
    expect(out.lines[0].req).toEqual({ method: 'GET', headers: { authorization: '[redacted]', cookie: '[redacted]', 'stripe-signature': '[redacted]' } });
    expect(out.lines[2]).toMatchObject({ token: '[redacted]', secret: '[redacted]', password: '[redacted]' });
    expect(out.lines[5].err).toMatchObject({ message: expect.stringContaining('boom'), query: 'SELECT 1 WHERE x = $1', parameters: '[redacted]' });
    expect(out.lines[6]).toMatchObject({ reqId: 'req_x', token: '[redacted]' });
  });
});
