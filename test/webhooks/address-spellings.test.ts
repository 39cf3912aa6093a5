import { CreateWebhookDocument } from '../../src/client/generated';
import { gql, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser } from '../support/factories';
import { expectInvalid } from '../rest/problem';
import { postWebhook } from './helpers';

/**
 * The metadata endpoint (169.254.169.254) in the spellings SSRF payloads use, and IPv6 forms
 * that wrap an internal IPv4 address (IPv4-compatible ::/96, IPv4-translated ::ffff:0:0/96,
 * NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo). This gateway never sends
 * (HATCHERY_WEBHOOK_WORKER off) and nothing is allow-listed; the accepted public spellings below
 * are only validated, never contacted.
 */
const REFUSED: Array<[string, string]> = [
  ['metadata, decimal', 'https://2852039166/latest/meta-data/'],
  ['metadata, hex', 'https://0xa9fea9fe/latest/meta-data/'],
  ['metadata, zero-padded hex', 'https://0x00000000a9fea9fe/'],
  ['metadata, dotted octal', 'https://0251.0376.0251.0376/'],
  ['metadata, dotted hex', 'https://0xa9.0xfe.0xa9.0xfe/'],
  ['metadata, three parts (169.254.43518)', 'https://169.254.43518/'],
  ['metadata, two parts (169.16689662)', 'https://169.16689662/'],
  ['metadata, trailing dot', 'https://169.254.169.254./'],
  ['metadata, percent-encoded', 'https://%31%36%39.254.169.254/'],
  ['metadata, with the default port', 'https://169.254.169.254:443/latest/meta-data/'],
  ['metadata, IPv4-mapped dotted', 'https://[::ffff:169.254.169.254]/'],
  ['metadata, IPv4-mapped long form', 'https://[0:0:0:0:0:ffff:a9fe:a9fe]/'],
  ['metadata, IPv4-compatible hex', 'https://[::a9fe:a9fe]/'],
  ['metadata, IPv4-compatible dotted', 'https://[::169.254.169.254]/'],
  ['metadata, NAT64', 'https://[64:ff9b::a9fe:a9fe]/'],
  ['metadata, 6to4', 'https://[2002:a9fe:a9fe::1]/'],
  ['loopback, IPv4-compatible hex', 'https://[::7f00:1]/hook'],
  ['loopback, IPv4-compatible dotted', 'https://[::127.0.0.1]/hook'],
  ['loopback, IPv4-translated (SIIT)', 'https://[::ffff:0:7f00:1]/hook'],
  ['loopback, NAT64 hex', 'https://[64:ff9b::7f00:1]/hook'],
  ['loopback, NAT64 dotted', 'https://[64:ff9b::127.0.0.1]/hook'],
  ['loopback, local-use NAT64', 'https://[64:ff9b:1::7f00:1]/hook'],
  ['loopback, 6to4', 'https://[2002:7f00:1::1]/hook'],
  ['private 10/8, 6to4', 'https://[2002:a00:1::1]/hook'],
  ['Teredo', 'https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook'],
  ['IPv6 site-local (deprecated)', 'https://[fec0::1]/hook'],
  ['IPv6 discard-only', 'https://[100::1]/hook'],
];

describe('refused webhook targets in other spellings', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_WEBHOOK_WORKER: 'off' });
    owner = await makeUser(t.gateway);
    ({ slug } = await makeApp(t.url, owner));
  });
  afterAll(() => t.stop());

  const stored = async (): Promise<number> => {
    const [row] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM webhooks w JOIN apps a ON a.id = w.app_id WHERE a.slug = $1', [slug]);
    return row.n;
  };

  it.each(REFUSED)('%s (%s) → 422 validation_failed naming url, nothing stored', async (_what, url) => {
    const res = await postWebhook(t, owner.token, slug, { url, events: ['deploy'] });
    expectInvalid(res, 'url');
    expect(res.body.errors.find((e: { field: string }) => e.field === 'url').message).toMatch(/is not an allowed address$/);
    expect(await stored()).toBe(0);
  });

  it.each([
    ['https://2852039166/'],
    ['https://0251.0376.0251.0376/'],
    ['https://[::a9fe:a9fe]/'],
    ['https://[64:ff9b::7f00:1]/'],
    ['https://[2002:7f00:1::1]/'],
  ])('GraphQL createWebhook(%s) → BAD_USER_INPUT naming url', async (url) => {
    const res = await gql(t.url, owner.token, CreateWebhookDocument, { app: slug, url, events: ['deploy'] });
    expect(res.data ?? null).toBeNull();
    expect(res.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0].extensions?.errors?.[0].field).toBe('url');
    expect(await stored()).toBe(0);
  });

  it('the same spellings of a public address are accepted, so the refusals are about the address, not the notation', async () => {
    const { slug: other } = await makeApp(t.url, owner);
    // 93.184.216.34 as a decimal number, as dotted octal and as three parts.
    for (const url of ['https://1572395042/hook', 'https://0135.0270.0330.042/hook', 'https://93.184.55330/hook']) {
      const res = await postWebhook(t, owner.token, other, { url, events: ['deploy'] });
      expect(res.status).toBe(201);
      expect(res.body.url).toBe('https://93.184.216.34/hook');
    }
  });
});
