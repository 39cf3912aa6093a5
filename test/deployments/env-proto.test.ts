import type { Client as WsClient } from 'graphql-ws';
import { print } from 'graphql';
import { DeployDocument } from '../../src/client/generated';
import { isEnvName } from '../../src/client/env-names';
import { GqlResult, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { countRows, expectProblem } from '../rest/problem';

/**
 * Issue 12, item 10: an env variable named `__proto__` is refused on every transport, by the
 * deploy service's own rule, and nothing is stored. Over REST, Fastify's JSON parser refuses the
 * body first (400); over GraphQL the key arrives as an own property (an inline object literal,
 * variables of a graphql-ws message or of a GET request) and used to be stored.
 */
describe('an env variable named __proto__', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;
  let ws: WsClient;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
    ws = wsClient(t.url, owner.token);
  });
  afterAll(async () => {
    await ws.dispose();
    await t.stop();
  });

  /** `{project, env}` with `env` holding `__proto__` as an own key (an object literal would set the prototype). */
  const input = () => JSON.parse(`{"project": ${JSON.stringify(slug)}, "env": {"__proto__": "polluted", "FINE": "yes"}}`);

  /** Runs `request` and asserts it stored no deployment, and that no object gained a `polluted` property. */
  async function storesNothing<T>(request: () => Promise<T>): Promise<T> {
    const before = await countRows(t, 'deployments');
    const result = await request();
    expect(await countRows(t, 'deployments')).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    return result;
  }

  function expectRefusedByService(res: GqlResult<unknown>): void {
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0].extensions?.errors).toEqual([{ field: 'env.__proto__', message: expect.stringContaining('__proto__') }]);
  }

  it('the shared rule: __proto__ is no env name, other names are', () => {
    expect(isEnvName('__proto__')).toBe(false);
    for (const name of ['FINE', '_x', 'constructor', 'prototype', '__proto', 'proto__']) expect(isEnvName(name)).toBe(true);
    for (const name of ['', '1A', 'A-B', 'A B']) expect(isEnvName(name)).toBe(false);
  });

  it('REST POST /deploy: 400 bad_request from the JSON parser, nothing stored', async () => {
    const res = await storesNothing(() => rest(t.url, owner.token, 'POST', '/deploy', JSON.stringify(input())));
    expectProblem(res, 400, 'bad_request');
  });

  it('GraphQL over HTTP, the key in an inline object literal: BAD_USER_INPUT naming env.__proto__, nothing stored', async () => {
    const query = `mutation { deploy(input: {project: ${JSON.stringify(slug)}, env: {__proto__: "polluted", FINE: "yes"}}) { id envKeys } }`;
    const res = await storesNothing(async () => {
      const r = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
        body: JSON.stringify({ query }),
      });
      return { status: r.status, ...((await r.json()) as Omit<GqlResult<unknown>, 'status'>) };
    });
    expectRefusedByService(res);
  });

  it.each([
    ['variables', print(DeployDocument), () => ({ variables: JSON.stringify({ input: input() }) })],
    ['an inline object literal', `mutation { deploy(input: {project: "x", env: {__proto__: "polluted"}}) { id } }`, () => ({})],
  ])('GraphQL over GET, the key in %s: 405 (mutations need POST), nothing stored', async (_what, query, extra) => {
    const params = new URLSearchParams({ query, ...extra() });
    const res = await storesNothing(() =>
      fetch(`${t.url}/graphql?${params.toString()}`, {
        headers: { accept: 'application/json', authorization: `Bearer ${owner.token}`, 'apollo-require-preflight': 'true' },
      }),
    );
    expect(res.status).toBe(405);
  });

  it('graphql-ws, the key in the variables of a subscribe message: BAD_USER_INPUT naming env.__proto__, nothing stored', async () => {
    const res = await storesNothing(
      () =>
        new Promise<GqlResult<unknown>>((resolve, reject) => {
          let result: GqlResult<unknown> | undefined;
          ws.subscribe(
            { query: print(DeployDocument), variables: { input: input() } },
            {
              next: (value) => {
                result = { status: 0, data: value.data, errors: value.errors as GqlResult<unknown>['errors'] };
              },
              error: reject,
              complete: () => (result ? resolve(result) : reject(new Error('completed without a result'))),
            },
          );
        }),
    );
    expectRefusedByService(res);
  });

  it('the same deploy without __proto__ is stored over graphql-ws, so the refusal above is about the name', async () => {
    const before = await countRows(t, 'deployments');
    const data = await new Promise<unknown>((resolve, reject) => {
      let got: unknown;
      ws.subscribe(
        { query: print(DeployDocument), variables: { input: { project: slug, env: { FINE: 'yes' } } } },
        { next: (v) => (got = v), error: reject, complete: () => resolve(got) },
      );
    });
    expect(data).toMatchObject({ data: { deploy: { envKeys: ['FINE'] } } });
    expect(await countRows(t, 'deployments')).toBe(before + 1);
  });
});
