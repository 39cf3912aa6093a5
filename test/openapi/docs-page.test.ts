import { routes } from '../../src/rest/routes';
import { startGateway, TestGateway } from '../support/gateway';

const unescape = (html: string) =>
  html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

describe('GET /docs: the API reference page', () => {
  let t: TestGateway;
  let html: string;
  let res: Response;

  beforeAll(async () => {
    t = await startGateway();
    res = await fetch(`${t.url}/docs`);
    html = await res.text();
  });
  afterAll(() => t.stop());

  it('is served without a token as HTML that loads nothing from anywhere', () => {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|\bsrc=|@import|url\(/i);
    for (const [, href] of html.matchAll(/href="([^"]*)"/g)) expect(href).toMatch(/^(#|\/openapi\.json$)/);
  });

  it('lists every endpoint with its method, path, summary, parameters, body fields and responses', async () => {
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; parameters: Array<{ name?: string }>; responses: Record<string, unknown> }>>;
    };
    const text = unescape(html);
    for (const route of routes) {
      const path = route.path.replace(/:(\w+)/g, '{$1}');
      const op = doc.paths[path][route.method.toLowerCase()];
      const article = text.slice(text.indexOf(`<article class="op" id="op-${op.operationId}">`));
      const own = article.slice(0, article.indexOf('</article>'));
      expect(own.length).toBeGreaterThan(0);
      expect(own).toContain(`>${route.method}</span> <code class="path">${path}</code>`);
      expect(own).toContain(route.summary);
      expect(own).toContain(route.since);
      for (const name of [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1])) expect(own).toContain(`<code>${name}</code></td><td>path`);
      for (const name of route.query ?? []) expect(own).toContain(`<code>${name}</code></td><td>query`);
      expect(own).toContain('<code>API-Version</code></td><td>header');
      for (const field of Object.keys(route.body ?? {})) expect(own).toContain(`<td><code>${field}</code></td>`);
      for (const status of Object.keys(op.responses)) expect(own).toMatch(new RegExp(`<td class="status s\\d">${status}</td>`));
      if (route.response) expect(own).toContain(`href="#schema-${route.response.body.name}"`);
    }
  });

  it('describes every response schema it links to', () => {
    const linked = new Set([...html.matchAll(/href="#schema-(\w+)"/g)].map((m) => m[1]));
    expect(linked.size).toBeGreaterThan(5);
    for (const name of linked) expect(html).toContain(`id="schema-${name}"`);
    expect(html).toMatch(/id="schema-Deployment">[\s\S]*?<code>env_keys<\/code>/);
  });
});
