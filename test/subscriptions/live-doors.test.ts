import { Client as WsClient, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import {
  AddCollaboratorDocument,
  CreateApiTokenDocument,
  DeploymentLogBatchStreamDocument,
  DeploymentLogStreamDocument,
  DeploymentStatusDocument,
  RemoveCollaboratorDocument,
  RevokeApiTokenDocument,
  ViewerDocument,
} from '../../src/client/generated';
import { collect, Collected, gqlOk, rest, startGateway, TestGateway } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';
import { startPair, Pair } from '../scale-out/helpers';
import { ShiftedClock } from '../crons/helpers';

/**
 * Issue 12, items 1 and 2: a token that stops working, or an egg the subscriber can no longer see,
 * leaves no open door on a graphql-ws connection, on any gateway.
 */

interface Watched {
  client: WsClient;
  /** Resolves with the close code and when it came. */
  closed: Promise<{ code: number; at: number }>;
}

/** A connection kept open while idle (not lazy), as a dashboard's would be. */
function connect(url: string, token: string): Watched {
  let resolve!: (v: { code: number; at: number }) => void;
  const closed = new Promise<{ code: number; at: number }>((r) => (resolve = r));
  const client = createClient({
    url: url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { closed: (e) => resolve({ code: (e as { code: number }).code, at: Date.now() }) },
  });
  return { client, closed };
}

/** A second token of the same account. */
async function secondToken(url: string, user: TestUser, expiresInDays?: number): Promise<{ id: string; token: string }> {
  const created = (await gqlOk(url, user.token, CreateApiTokenDocument, { name: 'ws', expiresInDays })).createApiToken;
  return { id: created.apiToken.id, token: created.token };
}

const codeOf = (errors: unknown) => (Array.isArray(errors) ? (errors[0] as { extensions?: { code?: string } })?.extensions?.code : undefined);

describe('a token that stops working closes its graphql-ws connections', () => {
  let t: TestGateway;
  let clock: ShiftedClock;
  beforeAll(async () => {
    clock = new ShiftedClock();
    t = await startGateway({}, { clock });
  });
  afterAll(() => t.stop());

  it('revoking the token closes its open connection with 4401 within a second, ending its streams', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const dep = await deploy(t.url, user, slug);
    await settle(t.url, user, dep.id);
    const ws = await secondToken(t.url, user);
    const conn = connect(t.url, ws.token);
    const status = collect(conn.client, DeploymentStatusDocument, { id: dep.id });
    await status.waitFor(1);

    await gqlOk(t.url, user.token, RevokeApiTokenDocument, { id: ws.id });
    const revokedAt = Date.now();
    const { code, at } = await conn.closed;
    expect(code).toBe(4401);
    expect(at - revokedAt).toBeLessThan(1000);
    await expect(status.done).rejects.toBeDefined();
    await conn.client.dispose();
  });

  it('each operation runs as the token stands now: one revoked behind the gateway’s back creates nothing', async () => {
    const user = await makeUser(t.gateway);
    const ws = await secondToken(t.url, user);
    const conn = connect(t.url, ws.token);
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    expect(viewer.items[0].viewer.id).toBe(user.id);

    // No event on the bus: only the per-operation check can see this.
    await t.gateway.ds.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [ws.id]);
    const before = (await t.gateway.ds.query('SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1', [user.id]))[0].n;
    const mint = collect(conn.client, CreateApiTokenDocument, { name: 'minted on a dead token' });
    const failure = await mint.done.then(
      () => null,
      (err: unknown) => err,
    );
    expect(mint.items).toEqual([]);
    expect(failure).not.toBeNull();
    expect((await conn.closed).code).toBe(4401);
    const after = (await t.gateway.ds.query('SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1', [user.id]))[0].n;
    expect(after).toBe(before);
    await conn.client.dispose();
  });

  it('a token that expires closes its connection with 4401 within a second of expiring', async () => {
    const user = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, user);
    const dep = await deploy(t.url, user, slug);
    const ws = await secondToken(t.url, user, 1);
    const conn = connect(t.url, ws.token);
    const status = collect(conn.client, DeploymentStatusDocument, { id: dep.id });
    await status.waitFor(1);
    let closedEarly = false;
    void conn.closed.then(() => (closedEarly = true));

    const [{ expires_at: expiresAt }] = await t.gateway.ds.query('SELECT expires_at FROM api_tokens WHERE id = $1', [ws.id]);
    clock.moveTo(new Date(expiresAt.getTime() - 60_000));
    // Still a minute to go: the stream keeps going.
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    expect(closedEarly).toBe(false);

    clock.moveTo(new Date(expiresAt.getTime()));
    const movedAt = Date.now();
    const { code, at } = await conn.closed;
    expect(code).toBe(4401);
    expect(at - movedAt).toBeLessThan(1000);
    clock.moveTo(new Date());
    await conn.client.dispose();
  });

  it('a connection that went quiet while its token was revoked learns it when the bus resumes (resync)', async () => {
    const user = await makeUser(t.gateway);
    const ws = await secondToken(t.url, user);
    const conn = connect(t.url, ws.token);
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    await t.gateway.ds.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [ws.id]);
    // What the event bus delivers to every ACCESS listener after a lost connection comes back.
    t.gateway.pubsub.target.dispatchEvent(new CustomEvent('ACCESS', { detail: { kind: 'resync' } }));
    expect((await conn.closed).code).toBe(4401);
    await conn.client.dispose();
  });
});

describe('an egg the subscriber can no longer see ends their streams on it', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '60000' });
  });
  afterAll(() => t.stop());

  it('removing a collaborator ends their status, log and log-batch streams with NOT_FOUND; their other streams and the connection go on', async () => {
    const owner = await makeUser(t.gateway);
    const collaborator = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    const { slug: own } = await makeApp(t.url, collaborator);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    const dep = await deploy(t.url, owner, slug);
    const mine = await deploy(t.url, collaborator, own);

    const conn = connect(t.url, collaborator.token);
    const streams: Array<Collected<unknown>> = [
      collect(conn.client, DeploymentStatusDocument, { id: dep.id }),
      collect(conn.client, DeploymentLogStreamDocument, { id: dep.id }),
      collect(conn.client, DeploymentLogBatchStreamDocument, { id: dep.id }),
    ];
    const other = collect(conn.client, DeploymentStatusDocument, { id: mine.id });
    await Promise.all([...streams, other].map((s) => s.waitFor(1)));

    await gqlOk(t.url, owner.token, RemoveCollaboratorDocument, { app: slug, email: collaborator.email });
    for (const s of streams) {
      const err = await s.done.then(
        () => 'completed',
        (e: unknown) => e,
      );
      expect(codeOf(err)).toBe('NOT_FOUND');
    }
    // Their own egg's stream, and the connection, are untouched.
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    expect(viewer.items[0].viewer.id).toBe(collaborator.id);
    expect(other.errors).toEqual([]);
    let otherEnded = false;
    void other.done.finally(() => (otherEnded = true));
    await new Promise((r) => setImmediate(r));
    expect(otherEnded).toBe(false);
    other.unsubscribe();
    await conn.client.dispose();
  });

  it('the owner’s streams on the egg are not affected by the removal', async () => {
    const owner = await makeUser(t.gateway);
    const collaborator = await makeUser(t.gateway);
    const { slug } = await makeApp(t.url, owner);
    await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    const dep = await deploy(t.url, owner, slug);
    const conn = connect(t.url, owner.token);
    const status = collect(conn.client, DeploymentStatusDocument, { id: dep.id });
    await status.waitFor(1);
    await gqlOk(t.url, owner.token, RemoveCollaboratorDocument, { app: slug, email: collaborator.email });
    // The removal's event is handled synchronously on this gateway; a check (one query) may follow.
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    expect(status.errors).toEqual([]);
    let ended = false;
    void status.done.finally(() => (ended = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(ended).toBe(false);
    await conn.client.dispose();
  });
});

describe('on every gateway (the events travel on the bus)', () => {
  let p: Pair;
  beforeAll(async () => {
    // Tokens kept as long as a gateway may keep them: a revocation must still end them at once.
    p = await startPair({ HATCHERY_SIM_BUILD_MS: '60000', HATCHERY_TOKEN_CACHE_MS: '1000' });
  });
  afterAll(() => p.stop());

  it('a token revoked on one gateway is refused over HTTP by the other as soon as the event reaches it, though it kept the token', async () => {
    const user = await makeUser(p.a);
    const second = await secondToken(p.aUrl, user);
    expect((await rest(p.bUrl, second.token, 'GET', '/deployments')).status).toBe(200);
    // B's own listener (the token cache's) was added at its start, so it has run when this one runs.
    const heard = new Promise<void>((resolve) => {
      const target = p.b.pubsub.target;
      const listener = (e: Event) => {
        const event = (e as CustomEvent<{ kind: string; tokenId?: string }>).detail;
        if (event.kind !== 'token-revoked' || event.tokenId !== second.id) return;
        target.removeEventListener('ACCESS', listener);
        resolve();
      };
      target.addEventListener('ACCESS', listener);
    });
    await gqlOk(p.aUrl, user.token, RevokeApiTokenDocument, { id: second.id });
    await heard;
    expect((await rest(p.bUrl, second.token, 'GET', '/deployments')).status).toBe(401);
  });

  it('a token revoked on one gateway closes its connection on the other within a second', async () => {
    const user = await makeUser(p.a);
    const ws = await secondToken(p.aUrl, user);
    const conn = connect(p.bUrl, ws.token);
    const viewer = collect(conn.client, ViewerDocument, {});
    await viewer.done;
    await gqlOk(p.aUrl, user.token, RevokeApiTokenDocument, { id: ws.id });
    const revokedAt = Date.now();
    const { code, at } = await conn.closed;
    expect(code).toBe(4401);
    expect(at - revokedAt).toBeLessThan(1000);
    await conn.client.dispose();
  });

  it('a collaborator removed on one gateway loses their stream on the other', async () => {
    const owner = await makeUser(p.a);
    const collaborator = await makeUser(p.a);
    const { slug } = await makeApp(p.aUrl, owner);
    await gqlOk(p.aUrl, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
    const dep = await deploy(p.aUrl, owner, slug);
    const conn = connect(p.bUrl, collaborator.token);
    const status = collect(conn.client, DeploymentStatusDocument, { id: dep.id });
    await status.waitFor(1);
    await gqlOk(p.aUrl, owner.token, RemoveCollaboratorDocument, { app: slug, email: collaborator.email });
    const err = await status.done.then(
      () => 'completed',
      (e: unknown) => e,
    );
    expect(codeOf(err)).toBe('NOT_FOUND');
    await conn.client.dispose();
  });
});
