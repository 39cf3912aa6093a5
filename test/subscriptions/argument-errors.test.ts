import { DeploymentLogStreamDocument, DeploymentLogStreamSubscriptionVariables, DeploymentStatusDocument } from '../../src/client/generated';
import { newId } from '../../src/ids';
import { collect, Collected, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';

type GqlError = { message?: string; extensions?: { code?: string } };

/**
 * Subscriptions over graphql-ws refuse bad arguments the way queries do: the stream ends with an
 * error carrying `extensions.code` and delivers nothing, and the connection stays usable.
 */
describe('graphql-ws subscriptions with bad arguments', () => {
  let t: TestGateway;
  let owner: TestUser;
  /** A finished (failed) deployment of the owner's egg, with build lines stored. */
  let depId: string;
  /** Close codes of the connection under test; a refused subscription must not close it. */
  const closes: number[] = [];
  let client: ReturnType<typeof wsClient>;
  /** A status stream held open for the whole file, so that every subscription shares one socket. */
  let keeper: Collected<unknown>;
  let keeperEnded = false;

  beforeAll(async () => {
    t = await startGateway();
    owner = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    depId = (await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' })).id;
    expect(await settle(t.url, owner, depId)).toBe('FAILED');
    client = wsClient(t.url, owner.token, (code) => closes.push(code));
    keeper = collect(client, DeploymentStatusDocument, { id: depId });
    keeper.done.then(
      () => (keeperEnded = true),
      () => (keeperEnded = true),
    );
    await keeper.waitFor(1);
  });
  afterAll(async () => {
    keeper?.unsubscribe();
    await client?.dispose();
    await t.stop();
  });

  /** The errors the stream ended with, whether sent as an `error` message or as a `next` with errors before `complete`. */
  async function refusalOf<T>(stream: Collected<T>): Promise<GqlError[]> {
    const outcome = await stream.done.then(
      () => stream.errors,
      (e: unknown) => e,
    );
    expect(Array.isArray(outcome)).toBe(true);
    return outcome as GqlError[];
  }

  /** Variables past the generated types, as a raw client could send them. */
  const raw = (v: Record<string, unknown>) => v as unknown as DeploymentLogStreamSubscriptionVariables;

  it.each([
    ['since "yesterday"', { since: 'yesterday' }, '"$since"'],
    ['since "2026-13-45T00:00:00Z"', { since: '2026-13-45T00:00:00Z' }, '"$since"'],
    ['type "BOGUS"', { type: 'BOGUS' }, '"$type"'],
    ['type "build" (enum values are upper case)', { type: 'build' }, '"$type"'],
  ])('deploymentLogs with %s ends with BAD_USER_INPUT naming the variable, and delivers no line', async (_name, args, names) => {
    const stream = collect(client, DeploymentLogStreamDocument, raw({ id: depId, ...args }));
    const errors = await refusalOf(stream);
    expect(errors.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(errors[0].message).toContain(names);
    expect(stream.items).toEqual([]);
  });

  it('the same deployment streams its lines with valid arguments on the same connection (only the argument was at fault)', async () => {
    const stream = collect(client, DeploymentLogStreamDocument, { id: depId, type: 'BUILD', since: '2000-01-01T00:00:00.000Z' });
    await stream.done;
    expect(stream.errors).toEqual([]);
    const lines = stream.items.map((i) => i.deploymentLogs);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.at(-1)!.message).toMatch(/^error: build failed/);
    expect(closes).toEqual([]);
    expect(keeperEnded).toBe(false);
  });

  describe('a well-formed dep_ id that was never created', () => {
    const neverCreated = newId('dep');

    it('deploymentStatus ends with NOT_FOUND and delivers nothing', async () => {
      const stream = collect(client, DeploymentStatusDocument, { id: neverCreated });
      const errors = await refusalOf(stream);
      expect(errors.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
      expect(stream.items).toEqual([]);
    });

    it.each([
      ['no arguments', {}],
      ['type BUILD', { type: 'BUILD' as const }],
      ['type RUNTIME and a since', { type: 'RUNTIME' as const, since: '2000-01-01T00:00:00.000Z' }],
    ])('deploymentLogs with %s ends with NOT_FOUND and delivers nothing', async (_name, args) => {
      const stream = collect(client, DeploymentLogStreamDocument, { id: neverCreated, ...args });
      const errors = await refusalOf(stream);
      expect(errors.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
      expect(stream.items).toEqual([]);
    });
  });

  it('none of the refusals closed the connection or ended its other subscription', async () => {
    const stream = collect(client, DeploymentStatusDocument, { id: depId });
    expect((await stream.waitFor(1))[0].deploymentStatus).toMatchObject({ id: depId, status: 'FAILED' });
    stream.unsubscribe();
    expect(closes).toEqual([]);
    expect(keeperEnded).toBe(false);
    expect(keeper.errors).toEqual([]);
  });
});
