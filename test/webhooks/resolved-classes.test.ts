import type { LookupFunction } from 'node:net';
import { CreateWebhookDocument } from '../../src/client/generated';
import { AddressGuard, ForbiddenTarget } from '../../src/modules/webhooks/address-guard';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { expectInvalid } from '../rest/problem';
import { postWebhook } from './helpers';
import { FakeDns } from './fake-dns';

/**
 * Host names whose DNS answers fall in a refused class. DNS is a stub (jest.spyOn on
 * dns.promises.lookup and dns.lookup, see fake-dns.ts): names under .test answer what each test
 * says, and nothing reaches a real resolver. Nothing here is ever sent: the unit tests only ask
 * the guard, and the gateway never sends (HATCHERY_WEBHOOK_WORKER off).
 */
const HOST = 'evil.test';

const CLASSES: Array<[string, string[]]> = [
  ['private 10/8', ['10.0.0.1']],
  ['private 172.16/12', ['172.16.5.4']],
  ['private 192.168/16', ['192.168.0.10']],
  ['loopback', ['127.0.0.1']],
  ['loopback elsewhere in 127/8', ['127.3.2.1']],
  ['IPv6 loopback', ['::1']],
  ['link-local metadata', ['169.254.169.254']],
  ['IPv6 link-local', ['fe80::1']],
  ['CGNAT', ['100.64.0.1']],
  ['unique-local', ['fd00::1']],
  ['unspecified', ['0.0.0.0']],
  ['IPv6 unspecified', ['::']],
  ['multicast', ['224.0.0.1']],
  ['IPv6 multicast', ['ff02::1']],
  ['broadcast', ['255.255.255.255']],
  ['IPv4-mapped loopback', ['::ffff:127.0.0.1']],
  ['IPv4-mapped private', ['::ffff:10.0.0.1']],
  ['IPv4-compatible loopback', ['::7f00:1']],
  ['NAT64 of loopback', ['64:ff9b::7f00:1']],
  ['public first, then private', ['93.184.216.34', '10.0.0.1']],
  ['private first, then public', ['10.0.0.1', '93.184.216.34']],
  ['public IPv4 and a unique-local IPv6', ['93.184.216.34', 'fd12::7']],
  ['public IPv6 and a link-local IPv4', ['2606:2800:220:1:248:1893:25c8:1946', '169.254.169.254']],
];

/** The refusal, whatever the answer: it names the host as registered and none of the addresses (issue 12, item 14). */
const REFUSAL = `${HOST} is not an allowed address`;

/** No address of the answer, in any spelling a message could use, appears in `text`. */
function expectNoAddress(text: string, addresses: string[]): void {
  for (const a of addresses) expect(text.toLowerCase()).not.toContain(a.toLowerCase());
  expect(text).not.toMatch(/resolve/i);
}

/** Calls a lookup function the way Node's http client does. */
function lookupOnce(lookup: LookupFunction, host: string, options: object): Promise<{ err: Error | null; address: unknown }> {
  return new Promise((resolve) => lookup(host, options, (err: NodeJS.ErrnoException | null, address: unknown) => resolve({ err, address })));
}

describe('host names resolving to refused addresses', () => {
  const dns = new FakeDns();
  beforeAll(() => dns.install());
  afterAll(() => dns.restore());

  describe('AddressGuard', () => {
    it.each(CLASSES)('%s (%j): refusal() refuses it without naming the address', async (_what, addresses) => {
      dns.set(HOST, addresses);
      const before = dns.count('promises', HOST);
      const reason = await new AddressGuard([]).refusal(new URL(`https://${HOST}/hook`));
      expect(reason).toBe(REFUSAL);
      expectNoAddress(reason!, addresses);
      expect(dns.count('promises', HOST)).toBe(before + 1);
    });

    it.each(CLASSES)('%s (%j): the connect-time lookup refuses it too', async (_what, addresses) => {
      dns.set(HOST, addresses);
      for (const options of [{}, { all: true }]) {
        const { err, address } = await lookupOnce(new AddressGuard([]).lookupFor(HOST), HOST, options);
        expect(err).toBeInstanceOf(ForbiddenTarget);
        expect(err!.message).toBe(REFUSAL);
        expectNoAddress(err!.message, addresses);
        expect(address === '' || address === undefined).toBe(true);
      }
    });

    it('a name whose answers are all public passes both checks; allow-listed by name, a private answer passes too', async () => {
      dns.set(HOST, ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
      expect(await new AddressGuard([]).refusal(new URL(`https://${HOST}/hook`))).toBeNull();
      const { err, address } = await lookupOnce(new AddressGuard([]).lookupFor(HOST), HOST, { all: true });
      expect(err).toBeNull();
      expect(address).toEqual([
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      ]);

      dns.set(HOST, ['10.0.0.1']);
      const exempt = new AddressGuard([HOST.toUpperCase()]);
      expect(await exempt.refusal(new URL(`https://${HOST}/hook`))).toBeNull();
      expect((await lookupOnce(exempt.lookupFor(HOST), HOST, {})).address).toBe('10.0.0.1');
      // Allow-listing an address does not exempt a name that resolves to it.
      expect(await new AddressGuard(['10.0.0.1']).refusal(new URL(`https://${HOST}/hook`))).toEqual(expect.any(String));
    });
  });

  describe('registration through the gateway', () => {
    let t: TestGateway;
    let owner: TestUser;
    let slug: string;

    beforeAll(async () => {
      t = await startGateway({ HATCHERY_WEBHOOK_WORKER: 'off' });
      owner = await makeUser(t.gateway);
      ({ slug } = await makeApp(t.url, owner));
    });
    afterAll(() => t.stop());

    const stored = async (): Promise<string[]> =>
      (await t.gateway.ds.query('SELECT w.url FROM webhooks w JOIN apps a ON a.id = w.app_id WHERE a.slug = $1', [slug])).map((r: { url: string }) => r.url);

    it.each([
      ['private', ['10.0.0.1']],
      ['link-local metadata', ['169.254.169.254']],
      ['CGNAT', ['100.64.0.1']],
      ['unique-local', ['fd00::1']],
      ['unspecified', ['0.0.0.0']],
      ['multicast', ['224.0.0.1']],
      ['IPv4-mapped loopback', ['::ffff:127.0.0.1']],
      ['a mixed answer, public first', ['93.184.216.34', '10.0.0.1']],
    ])('POST …/webhooks with a name resolving to %s (%j) → 422 naming url, nothing stored, no address echoed', async (_what, addresses) => {
      dns.set(HOST, addresses);
      const res = await postWebhook(t, owner.token, slug, { url: `https://${HOST}/hook`, events: ['deploy'] });
      expectInvalid(res, 'url');
      const message = res.body.errors.find((e: { field: string }) => e.field === 'url').message;
      expect(message).toBe(`must not point to a private, loopback or internal address: ${REFUSAL}`);
      expectNoAddress(JSON.stringify(res.body), addresses);
      expect(await stored()).toEqual([]);
    });

    it('a name resolving to a private address reads like a private literal, apart from the host as typed', async () => {
      dns.set(HOST, ['10.0.0.1']);
      const byName = await postWebhook(t, owner.token, slug, { url: `https://${HOST}/hook`, events: ['deploy'] });
      const byLiteral = await postWebhook(t, owner.token, slug, { url: 'https://10.0.0.1/hook', events: ['deploy'] });
      expectInvalid(byName, 'url');
      expectInvalid(byLiteral, 'url');
      expect(JSON.stringify(byName.body.errors).replaceAll(HOST, '<host>')).toBe(JSON.stringify(byLiteral.body.errors).replaceAll('10.0.0.1', '<host>'));
      expect(byName.body.detail.replaceAll(HOST, '<host>')).toBe(byLiteral.body.detail.replaceAll('10.0.0.1', '<host>'));
      expect(await stored()).toEqual([]);
    });

    it('GraphQL createWebhook with a name resolving to a private address → BAD_USER_INPUT naming url', async () => {
      dns.set(HOST, ['93.184.216.34', '192.168.1.1']);
      const res = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url: `https://${HOST}/hook`, events: ['deploy'] });
      expect(res.data ?? null).toBeNull();
      expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('url');
      expectNoAddress(JSON.stringify(res.errors), ['192.168.1.1', '93.184.216.34']);
      expect(await stored()).toEqual([]);
    });

    it('the same name resolving only to public addresses → 201 (the refusals come from the answers)', async () => {
      dns.set(HOST, ['93.184.216.34']);
      const res = await postWebhook(t, owner.token, slug, { url: `https://${HOST}/hook`, events: ['deploy'] });
      expect(res.status).toBe(201);
      expect(await stored()).toEqual([`https://${HOST}/hook`]);
    });
  });
});
