import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Browser } from 'playwright-core';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeApp, makeUser, TestUser, unique } from '../support/factories';
import { GatedRuntime, launchChromium, offlineContext, run, storedToken, waitForResponse } from './helpers';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

/** The page's asset URLs, by file name. */
function assetUrls(html: string): Map<string, string> {
  const urls = [...html.matchAll(/<(?:script src|link rel="stylesheet" href)="([^"]+)"/g)].map((m) => m[1]);
  return new Map(urls.map((u) => [u.split('/').pop()!, u]));
}

describe('GraphQL explorer on GET /graphql', () => {
  let t: TestGateway;
  let sim: GatedRuntime;
  let browser: Browser;
  let user: TestUser;

  beforeAll(async () => {
    [t, browser] = await Promise.all([startGateway({}, { runtime: (ds) => (sim = new GatedRuntime(ds)) }), launchChromium()]);
    user = await makeUser(t.gateway);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it('serves a page to browsers, without a token, whose assets all come from the gateway', async () => {
    const res = await fetch(`${t.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'self';/);
    const html = await res.text();
    expect(html).toContain('<title>GraphQL explorer · Hatchery</title>');
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBe(6);
    for (const ref of refs) expect(ref).toMatch(/^\/graphql\/explorer\/assets\/[0-9a-f]{16}\/[\w.-]+$/);
    expect(html).not.toMatch(/https?:\/\//);
    const head = await fetch(`${t.url}/graphql`, { method: 'HEAD', headers: { accept: BROWSER_ACCEPT } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/html; charset=utf-8');

    const assets = assetUrls(html);
    const installed: Array<[string, string, string]> = [
      ['react.production.min.js', 'node_modules/react/umd/react.production.min.js', 'text/javascript; charset=utf-8'],
      ['react-dom.production.min.js', 'node_modules/react-dom/umd/react-dom.production.min.js', 'text/javascript; charset=utf-8'],
      ['graphql-ws.min.js', 'node_modules/graphql-ws/umd/graphql-ws.min.js', 'text/javascript; charset=utf-8'],
      ['graphiql.min.js', 'node_modules/graphiql/graphiql.min.js', 'text/javascript; charset=utf-8'],
      ['graphiql.min.css', 'node_modules/graphiql/graphiql.min.css', 'text/css; charset=utf-8'],
    ];
    for (const [name, file, type] of installed) {
      const path = assets.get(name)!;
      expect(path).toBeDefined();
      const plain = await fetch(`${t.url}${path}`, { headers: { 'accept-encoding': 'identity' } });
      expect({ name, status: plain.status, type: plain.headers.get('content-type') }).toEqual({ name, status: 200, type });
      expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(Buffer.from(await plain.arrayBuffer()).equals(readFileSync(`${__dirname}/../../${file}`))).toBe(true);
    }

    const own = await fetch(`${t.url}${assets.get('explorer.js')}`);
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toBe('text/javascript; charset=utf-8');

    // Compressed when the client can take it, and revalidated by its content hash.
    const http = await import('node:http');
    const zipped = await new Promise<{ status: number; encoding?: string; etag?: string; body: Buffer }>((resolve, reject) => {
      http
        .get(`${t.url}${assets.get('graphiql.min.js')}`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ status: r.statusCode!, encoding: r.headers['content-encoding'], etag: r.headers.etag, body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });
    expect(zipped.status).toBe(200);
    expect(zipped.encoding).toBe('gzip');
    expect(gunzipSync(zipped.body).equals(readFileSync(`${__dirname}/../../node_modules/graphiql/graphiql.min.js`))).toBe(true);
    const again = await fetch(`${t.url}${assets.get('graphiql.min.js')}`, { headers: { 'if-none-match': zipped.etag! } });
    expect(again.status).toBe(304);

    const stale = await rest(t.url, null, 'GET', '/graphql/explorer/assets/0000000000000000/graphiql.min.js');
    expect(stale.status).toBe(404);
    expect(stale.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(stale.body.code).toBe('not_found');
  });

  it('leaves GraphQL-over-HTTP GETs and JSON clients to the GraphQL server', async () => {
    const json = 'application/graphql-response+json, application/json';
    const get = (query: string, headers: Record<string, string>) => rest(t.url, null, 'GET', `/graphql${query}`, undefined, headers);
    const auth = { authorization: `Bearer ${user.token}`, 'apollo-require-preflight': 'true' };

    const ok = await get('?query=%7B__typename%7D', { ...auth, accept: json });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^application\/(graphql-response\+)?json/);
    expect(ok.body).toEqual({ data: { __typename: 'Query' } });

    // A browser's Accept with a query is still a GraphQL request.
    const fromBrowser = await get('?query=%7B__typename%7D', { ...auth, accept: BROWSER_ACCEPT });
    expect(fromBrowser.status).toBe(200);
    expect(fromBrowser.body).toEqual({ data: { __typename: 'Query' } });

    // The page needs no token; GraphQL requests still do.
    const anonymous = await get('?query=%7B__typename%7D', { 'apollo-require-preflight': 'true', accept: json });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');

    for (const accept of [json, '*/*', 'application/json, text/html;q=0.5']) {
      const noQuery = await get('', { ...auth, accept });
      expect({ accept, status: noQuery.status, html: /text\/html/.test(noQuery.headers.get('content-type') ?? '') }).toEqual({
        accept,
        status: 400,
        html: false,
      });
    }

    const post = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', accept: BROWSER_ACCEPT },
      body: JSON.stringify({ query: '{ viewer { email } }' }),
    });
    expect(post.status).toBe(200);
    expect(await post.json()).toEqual({ data: { viewer: { email: user.email } } });
  });

  it('runs a query, a mutation and a subscription in headless Chromium with no internet', async () => {
    const slug = (await makeApp(t.url, user)).slug;
    sim.held.add(slug);
    const b = await offlineContext(browser, t.url);
    try {
      const { page } = b;
      await page.goto(`${t.url}/graphql`);
      await page.waitForSelector('.graphiql-container');
      await page.fill('#hatchery-token', user.token);
      await page.press('#hatchery-token', 'Enter');
      expect(await storedToken(page)).toBe(user.token);

      await run(page, '{ viewer { email } }');
      const viewer = await waitForResponse(page, '"viewer"');
      expect(JSON.parse(viewer)).toEqual({ data: { viewer: { email: user.email } } });
      expect(b.graphqlRequests.length).toBeGreaterThan(0);
      for (const headers of b.graphqlRequests) expect(headers.authorization).toBe(`Bearer ${user.token}`);

      await run(page, `mutation { deploy(input: { project: "${slug}" }) { id status } }`);
      const deployed = JSON.parse(await waitForResponse(page, '"deploy"'));
      expect(deployed.data.deploy).toMatchObject({ status: 'BUILDING', id: expect.stringMatching(/^dep_/) });
      const id: string = deployed.data.deploy.id;

      await run(page, `subscription { deploymentStatus(id: "${id}") { id status } }`);
      const building = await waitForResponse(page, '"deploymentStatus"');
      expect(JSON.parse(building)).toEqual({ data: { deploymentStatus: { id, status: 'BUILDING' } } });
      sim.release(slug);
      const live = await waitForResponse(page, '"LIVE"');
      expect(JSON.parse(live)).toEqual({ data: { deploymentStatus: { id, status: 'LIVE' } } });

      // The subscription went over graphql-ws on the gateway's /graphql, authenticated at connect.
      const init = b.wsSent.find((f) => f.message.type === 'connection_init');
      expect(init?.url).toBe(`${t.url.replace(/^http/, 'ws')}/graphql`);
      expect(init?.message.payload).toEqual({ authorization: `Bearer ${user.token}` });
      expect(b.wsSent.some((f) => f.message.type === 'subscribe')).toBe(true);

      expect(b.foreign).toEqual([]);
      expect(b.errors).toEqual([]);
    } finally {
      sim.release(slug);
      await b.context.close();
    }
  });

  it('keeps the pasted token across visits and forgets it on request', async () => {
    const other = await makeUser(t.gateway, `${unique('explorer')}@example.com`);
    const b = await offlineContext(browser, t.url);
    try {
      const { page } = b;
      await page.goto(`${t.url}/graphql`);
      await page.waitForSelector('.graphiql-container');
      await expect(page.textContent('#hatchery-hint')).resolves.toMatch(/Paste an API token/);
      await page.fill('#hatchery-token', `Bearer ${other.token}`);
      await page.click('button[type=submit]');

      await page.reload();
      await page.waitForSelector('.graphiql-container');
      expect(await page.inputValue('#hatchery-token')).toBe(other.token);
      await run(page, '{ viewer { email } }');
      expect(JSON.parse(await waitForResponse(page, '"viewer"'))).toEqual({ data: { viewer: { email: other.email } } });

      await page.click('#hatchery-forget');
      expect(await storedToken(page)).toBeNull();
      await page.waitForSelector('.graphiql-container');
      await run(page, '{ viewer { email } }');
      const refused = JSON.parse(await waitForResponse(page, 'UNAUTHENTICATED'));
      expect(refused.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(b.foreign).toEqual([]);
      // Chromium logs the 401 itself; anything else is the page's fault.
      expect(b.errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    } finally {
      await b.context.close();
    }
  });
});
