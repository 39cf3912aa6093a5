import { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { ManualClock } from '../../src/clock';
import { EnergyLedgerDocument } from '../../src/client/generated';
import { EnergyReason } from '../../src/modules/energy/energy.entity';
import { gql, gqlOk, startGateway, TestGateway } from '../support/gateway';
import { makeUser, TestUser } from '../support/factories';
import { energyOf, ledgerRows } from './helpers';

interface LedgerPage {
  energyLedger: {
    edges: Array<{ cursor: string; node: { id: string; bucket: string; delta: number; reason: string; createdAt: string } }>;
    nodes: Array<{ id: string }>;
    pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  };
}
type PageVars = { first?: number | null; after?: string | null };

const LedgerPageDocument = parse(`
  query LedgerPage($first: Int, $after: String) {
    energyLedger(first: $first, after: $after) {
      edges { cursor node { id bucket delta reason createdAt } }
      nodes { id }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
`) as TypedDocumentNode<LedgerPage, PageVars>;

/** The (reason, bucket, delta) of each entry, in the order the test writes them. */
const WRITTEN = [
  ['GRANT', 'DAILY', 120],
  ['GRANT', 'WEEKLY', 600],
  ['OPERATOR', 'DAILY', -70],
  ['OPERATOR', 'BONUS', 10],
  ['OPERATOR', 'PACK', 5],
  ['CRON_RUN', 'DAILY', -50],
  ['CRON_RUN', 'WEEKLY', -5],
];

describe('energyLedger is a connection paged newest first', () => {
  let t: TestGateway;
  const clock = new ManualClock('2026-11-18T09:00:00.000Z');
  let user: TestUser;

  beforeAll(async () => {
    t = await startGateway({}, { clock });
    user = await makeUser(t.gateway);
    // Seven entries, each write a second after the last.
    await energyOf(t.url, user.token); // GRANT daily, weekly
    clock.advance(1000);
    await t.gateway.services.energy.setBuckets(user.email, { daily: 50, bonus: 10, pack: 5 });
    clock.advance(1000);
    await t.gateway.ds.transaction((tx) => t.gateway.services.energy.consume(tx, user.id, 55, EnergyReason.CRON_RUN, null));
  });
  afterAll(() => t.stop());

  /** Follows endCursor from the start with pages of `first`; returns every page. */
  async function pages(first: number): Promise<LedgerPage['energyLedger'][]> {
    const out: LedgerPage['energyLedger'][] = [];
    let after: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page: LedgerPage['energyLedger'] = (await gqlOk(t.url, user.token, LedgerPageDocument, { first, after })).energyLedger;
      out.push(page);
      if (!page.pageInfo.hasNextPage) return out;
      after = page.pageInfo.endCursor;
      expect(after).not.toBeNull();
    }
    throw new Error('energyLedger did not end within 20 pages');
  }

  it('first: 2 following endCursor gives 2, 2, 2, 1 entries; their union is the full list, newest first, without duplicates', async () => {
    const paged = await pages(2);
    expect(paged.map((p) => p.edges.length)).toEqual([2, 2, 2, 1]);
    expect(paged.map((p) => p.pageInfo.hasNextPage)).toEqual([true, true, true, false]);

    const ids = paged.flatMap((p) => p.edges.map((e) => e.node.id));
    expect(new Set(ids).size).toBe(ids.length);
    // Ids are time-sortable: strictly descending is newest first.
    expect([...ids].sort().reverse()).toEqual(ids);
    const times = paged.flatMap((p) => p.edges.map((e) => Date.parse(e.node.createdAt)));
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const full = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 100 })).energyLedger;
    expect(full.pageInfo.hasNextPage).toBe(false);
    expect(full.edges.map((e) => e.node.id)).toEqual(ids);
    expect(paged.flatMap((p) => p.edges.map((e) => [e.node.reason, e.node.bucket, e.node.delta]))).toEqual([...WRITTEN].reverse());
    // The same entries as the stored ledger of this account, and no one else's.
    expect((await ledgerRows(t.gateway.ds, user.id)).map((r) => r.id).reverse()).toEqual(ids);
  });

  it('each page’s edges carry the nodes and their cursors; startCursor/endCursor are the first and last edge; paging only goes forwards', async () => {
    for (const page of await pages(3)) {
      expect(page.nodes.map((n) => n.id)).toEqual(page.edges.map((e) => e.node.id));
      expect(new Set(page.edges.map((e) => e.cursor)).size).toBe(page.edges.length);
      expect(page.pageInfo.startCursor).toBe(page.edges[0].cursor);
      expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)!.cursor);
      expect(page.pageInfo.hasPreviousPage).toBe(false);
    }
    // Any edge's cursor resumes right after that edge.
    const full = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 100 })).energyLedger;
    const fromThird = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 2, after: full.edges[2].cursor })).energyLedger;
    expect(fromThird.edges.map((e) => e.node.id)).toEqual(full.edges.slice(3, 5).map((e) => e.node.id));
  });

  it('a page that ends exactly on the last entry says there is no next page', async () => {
    const exact = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 7 })).energyLedger;
    expect(exact.edges).toHaveLength(7);
    expect(exact.pageInfo.hasNextPage).toBe(false);
    const oneShort = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 6 })).energyLedger;
    expect(oneShort.pageInfo.hasNextPage).toBe(true);
    const rest = (await gqlOk(t.url, user.token, LedgerPageDocument, { first: 6, after: oneShort.pageInfo.endCursor })).energyLedger;
    expect(rest.edges.map((e) => e.node.id)).toEqual([exact.edges[6].node.id]);
    expect(rest.pageInfo.hasNextPage).toBe(false);
  });

  it('a new entry does not shift later pages: it appears only at the front', async () => {
    const other = await makeUser(t.gateway);
    await energyOf(t.url, other.token); // 2 GRANT entries
    await t.gateway.services.energy.setBuckets(other.email, { bonus: 1, pack: 1 });
    const first = (await gqlOk(t.url, other.token, LedgerPageDocument, { first: 2 })).energyLedger;
    clock.advance(1000);
    await t.gateway.services.energy.setBuckets(other.email, { bonus: 2 });
    const second = (await gqlOk(t.url, other.token, LedgerPageDocument, { first: 2, after: first.pageInfo.endCursor })).energyLedger;
    expect(second.edges.map((e) => [e.node.reason, e.node.bucket])).toEqual([
      ['GRANT', 'WEEKLY'],
      ['GRANT', 'DAILY'],
    ]);
    expect(second.pageInfo.hasNextPage).toBe(false);
    const front = (await gqlOk(t.url, other.token, LedgerPageDocument, { first: 1 })).energyLedger;
    expect(front.edges.map((e) => [e.node.reason, e.node.bucket, e.node.delta])).toEqual([['OPERATOR', 'BONUS', 1]]);
  });

  it.each([
    ['first: 0', { first: 0 }],
    ['first: 101', { first: 101 }],
    ['a cursor that is not one', { first: 2, after: 'bm90LWEtY3Vyc29y' }],
  ])('refuses %s with BAD_USER_INPUT', async (_label, vars) => {
    const res = await gql(t.url, user.token, LedgerPageDocument, vars);
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('without a token: UNAUTHENTICATED and no entries', async () => {
    for (const doc of [LedgerPageDocument, EnergyLedgerDocument] as const) {
      const res = await gql(t.url, null, doc as TypedDocumentNode<unknown, PageVars>, { first: 2 });
      expect(res.data ?? null).toBeNull();
      expect(res.errors).toHaveLength(1);
      expect(res.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
    const bad = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer hatch_not-a-real-token' },
      body: JSON.stringify({ query: '{ energyLedger(first: 2) { nodes { id } } }' }),
    });
    const body = (await bad.json()) as { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> };
    expect(body.data ?? null).toBeNull();
    expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
