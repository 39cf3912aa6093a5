import { randomBytes } from 'node:crypto';
import { print } from 'graphql';
import { ManualClock } from '../../src/clock';
import { CreateApiTokenDocument, DeploymentStatusDocument, RevokeApiTokenDocument, ViewerDocument } from '../../src/client/generated';
import { collect, gqlOk, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { expectUnauthorized, UNKNOWN_DEPLOYMENT_ID, writesNothing } from './problem';

const DAY_MS = 86_400_000;

interface GraphQLBody {
  data?: { viewer?: { email: string } } | null;
  errors?: Array<{ message: string; extensions?: { code?: string } }>;
}

describe('authentication on REST, GraphQL over HTTP and graphql-ws', () => {
  const clock = new ManualClock();
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  /** POST /graphql with a raw Authorization header (or none), keeping the response headers. */
  async function graphqlOverHttp(authorization: string | null) {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ query: print(ViewerDocument) }),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLBody };
  }

  /** The close code of a graphql-ws connection whose connection_init carries `token`. */
  async function wsCloseCode(token: string | null): Promise<number> {
    let onClose!: (code: number) => void;
    const closed = new Promise<number>((resolve) => (onClose = resolve));
    const client = wsClient(t.url, token, (code) => onClose(code));
    const stream = collect(client, DeploymentStatusDocument, { id: UNKNOWN_DEPLOYMENT_ID });
    try {
      const code = await closed;
      await expect(stream.done).rejects.toBeDefined();
      expect(stream.items).toEqual([]);
      return code;
    } finally {
      await client.dispose();
    }
  }

  async function newToken(expiresInDays?: number) {
    return (await gqlOk(t.url, owner.token, CreateApiTokenDocument, { name: 'test', expiresInDays })).createApiToken;
  }

  describe('REST answers 401 unauthorized with WWW-Authenticate: Bearer', () => {
    it('when the Authorization header is missing', async () => {
      expectUnauthorized(await rest(t.url, null, 'GET', '/deployments'));
    });

    it('when POST /deploy has no token, and writes nothing', async () => {
      const res = await writesNothing(t, () => rest(t.url, null, 'POST', '/deploy', { project: slug }));
      expectUnauthorized(res);
    });

    it.each([
      ['a non-Bearer scheme', () => 'Token x'],
      ['"Bearer" without a token', () => 'Bearer'],
      ['Basic credentials', () => 'Basic dXNlcjpwYXNz'],
      ['two words after Bearer', () => `Bearer ${owner.token} extra`],
      ['a valid token without the scheme', () => owner.token],
    ])('when the Authorization header is malformed: %s', async (_name, header) => {
      expectUnauthorized(await rest(t.url, null, 'GET', '/deployments', undefined, { authorization: header() }));
    });

    it('when the token is unknown', async () => {
      expectUnauthorized(await rest(t.url, `hatch_${randomBytes(24).toString('base64url')}`, 'GET', '/deployments'));
    });

    it('when the token does not look like a Hatchery token', async () => {
      expectUnauthorized(await rest(t.url, 'not-a-hatchery-token', 'GET', '/deployments'));
    });

    it('when the token has expired', async () => {
      const created = await newToken(1);
      expect((await rest(t.url, created.token, 'GET', '/deployments')).status).toBe(200);

      clock.advance(2 * DAY_MS);

      const res = await rest(t.url, created.token, 'GET', '/deployments');
      expectUnauthorized(res);
      // The same token is refused by POST /deploy too, and nothing is deployed with it.
      expectUnauthorized(await writesNothing(t, () => rest(t.url, created.token, 'POST', '/deploy', { project: slug })));
    });

    it('when the token has been revoked', async () => {
      const created = await newToken();
      expect((await rest(t.url, created.token, 'GET', '/deployments')).status).toBe(200);

      await gqlOk(t.url, owner.token, RevokeApiTokenDocument, { id: created.apiToken.id });

      expectUnauthorized(await rest(t.url, created.token, 'GET', '/deployments'));
      expectUnauthorized(await writesNothing(t, () => rest(t.url, created.token, 'POST', '/deploy', { project: slug })));
    });

    it('with the same body for every kind of bad credential, so a caller learns nothing about a token', async () => {
      const revoked = await newToken();
      await gqlOk(t.url, owner.token, RevokeApiTokenDocument, { id: revoked.apiToken.id });
      const unknown = `hatch_${randomBytes(24).toString('base64url')}`;
      const shape = (b: Record<string, unknown>) => ({ type: b.type, title: b.title, status: b.status, code: b.code });
      const a = await rest(t.url, revoked.token, 'GET', '/deployments');
      const b = await rest(t.url, unknown, 'GET', '/deployments');
      expectUnauthorized(a);
      expectUnauthorized(b);
      expect(shape(a.body)).toEqual(shape(b.body));
      expect(a.body.detail).toBe(b.body.detail);
    });
  });

  describe('GraphQL over HTTP answers 401 with extensions.code UNAUTHENTICATED', () => {
    it('when the Authorization header is missing', async () => {
      const res = await graphqlOverHttp(null);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      expect(res.body.data ?? null).toBeNull();
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('when the header is malformed', async () => {
      const res = await graphqlOverHttp('Token x');
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('when the token is unknown', async () => {
      const res = await graphqlOverHttp(`Bearer hatch_${randomBytes(24).toString('base64url')}`);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('when the token has been revoked', async () => {
      const created = await newToken();
      expect((await graphqlOverHttp(`Bearer ${created.token}`)).status).toBe(200);
      await gqlOk(t.url, owner.token, RevokeApiTokenDocument, { id: created.apiToken.id });
      const res = await graphqlOverHttp(`Bearer ${created.token}`);
      expect(res.status).toBe(401);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('but answers a valid token', async () => {
      const res = await graphqlOverHttp(`Bearer ${owner.token}`);
      expect(res.status).toBe(200);
      expect(res.body.data?.viewer?.email).toBe(owner.email);
    });
  });

  describe('graphql-ws closes the connection with 4401', () => {
    it('when connection_init carries no token', async () => {
      expect(await wsCloseCode(null)).toBe(4401);
    });

    it('when connection_init carries an unknown token', async () => {
      expect(await wsCloseCode(`hatch_${randomBytes(24).toString('base64url')}`)).toBe(4401);
    });

    it('when connection_init carries a revoked token', async () => {
      const created = await newToken();
      await gqlOk(t.url, owner.token, RevokeApiTokenDocument, { id: created.apiToken.id });
      expect(await wsCloseCode(created.token)).toBe(4401);
    });
  });

  describe('health endpoints need no token', () => {
    it('GET /healthz answers 200', async () => {
      const res = await rest(t.url, null, 'GET', '/healthz');
      expect(res.status).toBe(200);
      expect(res.headers.get('www-authenticate')).toBeNull();
    });

    it('GET /readyz answers 200', async () => {
      const res = await rest(t.url, null, 'GET', '/readyz');
      expect(res.status).toBe(200);
      expect(res.headers.get('www-authenticate')).toBeNull();
    });
  });
});
