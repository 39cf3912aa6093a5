import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { FastifyInstance, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import { sendProblem } from './problems';
import { GRAPHQL_PATH } from './responses';

const ASSET_PREFIX = `${GRAPHQL_PATH}/explorer/assets`;
const TOKEN_KEY = 'hatchery.explorer.token';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** Where a package is installed; some (graphql-ws) do not export their package.json. */
function packageDir(pkg: string): string {
  for (let dir = dirname(require.resolve(pkg)); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === pkg) return dir;
    if (dirname(dir) === dir) throw new Error(`explorer: cannot find the installed package ${pkg}`);
  }
}

interface Asset {
  path: string;
  type: string;
  body: Buffer;
  etag: string;
  gzipped?: Promise<Buffer>;
}

/** The page's own code: plain ES5 run as is, served like the vendored files. */
const BOOTSTRAP = `(function () {
  'use strict';
  var KEY = ${JSON.stringify(TOKEN_KEY)};
  var httpUrl = location.origin + location.pathname;
  var wsUrl = httpUrl.replace(/^http/, 'ws');
  var form = document.getElementById('hatchery-auth');
  var input = document.getElementById('hatchery-token');
  var forget = document.getElementById('hatchery-forget');
  var hint = document.getElementById('hatchery-hint');
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  var current = null;

  function stored() { try { return localStorage.getItem(KEY) || ''; } catch (e) { return ''; } }
  function store(token) { try { token ? localStorage.setItem(KEY, token) : localStorage.removeItem(KEY); } catch (e) { /* private mode */ } }

  function apply() {
    var token = input.value.trim().replace(/^Bearer\\s+/i, '');
    if (current && current.token === token) return;
    store(token);
    // A new token is a new caller: close the old socket and its subscriptions.
    if (current) current.ws.dispose();
    var auth = token ? { authorization: 'Bearer ' + token } : {};
    var ws = graphqlWs.createClient({ url: wsUrl, lazy: true, retryAttempts: 0, connectionParams: auth });
    var base = GraphiQL.createFetcher({ url: httpUrl, headers: auth, wsClient: ws, enableIncrementalDelivery: false });
    // GraphiQL parses the editor's text after a debounce, so an operation run right after an
    // edit carries the previous text's operation name and AST (a subscription would go over
    // HTTP): take both from the text actually sent.
    var fetcher = function (params, opts) {
      var documentAST;
      try { documentAST = GraphiQL.GraphQL.parse(params.query); } catch (e) { return base(params, opts); }
      var ops = documentAST.definitions.filter(function (d) { return d.kind === 'OperationDefinition'; });
      var named = ops.some(function (d) { return d.name && d.name.value === params.operationName; });
      if (!named && ops.length === 1) params = Object.assign({}, params, { operationName: ops[0].name ? ops[0].name.value : undefined });
      return base(params, Object.assign({}, opts, { documentAST: documentAST }));
    };
    current = { token: token, ws: ws };
    hint.textContent = token ? 'Token saved in this browser.' : 'Paste an API token (hatch_…) to load the schema and run operations.';
    root.render(React.createElement(GraphiQL, {
      key: token,
      fetcher: fetcher,
      // Without a token introspection would only answer 401.
      schema: token ? undefined : null,
      defaultQuery: '# Hatchery GraphQL explorer.\\n# Paste an API token above, then run an operation with Ctrl-Enter.\\n# Subscriptions run over graphql-ws on this same path.\\n\\nquery Viewer {\\n  viewer {\\n    id\\n    email\\n  }\\n}\\n'
    }));
  }

  input.value = stored();
  form.addEventListener('submit', function (e) { e.preventDefault(); apply(); });
  input.addEventListener('change', apply);
  forget.addEventListener('click', function () { input.value = ''; apply(); });
  apply();
})();
`;

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(assets: Record<'react' | 'reactDom' | 'graphqlWs' | 'graphiqlJs' | 'graphiqlCss' | 'bootstrap', Asset>): string {
  const script = (a: Asset) => `<script src="${esc(a.path)}"></script>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphQL explorer · Hatchery</title>
<link rel="stylesheet" href="${esc(assets.graphiqlCss.path)}">
<style>html,body{height:100%;margin:0}body{display:flex;flex-direction:column;font:14px/1.4 system-ui,sans-serif}
#hatchery-bar{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;padding:.5rem .75rem;border-bottom:1px solid #ddd}
#hatchery-auth{display:flex;gap:.5rem;align-items:center;flex:1;min-width:18rem}
#hatchery-token{flex:1;max-width:34rem;font:13px ui-monospace,monospace;padding:.3rem .5rem}
#hatchery-hint{color:#666}#graphiql{flex:1;min-height:0}</style>
</head><body>
<header id="hatchery-bar"><strong>Hatchery</strong>
<form id="hatchery-auth"><label for="hatchery-token">Bearer token</label>
<input id="hatchery-token" name="token" type="password" autocomplete="off" spellcheck="false" placeholder="hatch_…">
<button type="submit">Use token</button><button type="button" id="hatchery-forget">Forget</button></form>
<span id="hatchery-hint" role="status"></span></header>
<main id="graphiql">Loading the explorer…</main>
<noscript>The explorer needs JavaScript.</noscript>
${[assets.react, assets.reactDom, assets.graphqlWs, assets.graphiqlJs, assets.bootstrap].map(script).join('\n')}
</body></html>`;
}

/**
 * Whether the client asked for a page rather than a GraphQL response: a browser's navigation
 * names text/html explicitly; GraphQL clients name JSON or send only a wildcard, which stays
 * Apollo's.
 */
export function prefersHtml(accept: string | undefined): boolean {
  let html = { q: 0, at: Infinity };
  let json = { q: 0, at: Infinity };
  (accept ?? '').split(',').forEach((range, at) => {
    const [type, ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!(q > 0)) return;
    if ((type === 'text/html' || type === 'application/xhtml+xml') && q > html.q) html = { q, at };
    if ((type === 'application/json' || type === 'application/graphql-response+json') && q > json.q) json = { q, at };
  });
  return html.q > json.q || (html.q > 0 && html.q === json.q && html.at < json.at);
}

/**
 * The GraphQL explorer (GraphiQL) on `GET /graphql` for browsers, with every asset served from
 * installed packages so it works offline. Register before the GraphQL route: it attaches to that
 * route, leaving GraphQL-over-HTTP GETs (`?query=`) and JSON clients to Apollo.
 */
export function registerExplorer(app: FastifyInstance): void {
  const files = {
    react: { pkg: 'react', file: 'umd/react.production.min.js', type: JS },
    reactDom: { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: JS },
    graphqlWs: { pkg: 'graphql-ws', file: 'umd/graphql-ws.min.js', type: JS },
    graphiqlJs: { pkg: 'graphiql', file: 'graphiql.min.js', type: JS },
    graphiqlCss: { pkg: 'graphiql', file: 'graphiql.min.css', type: CSS },
  } as const;
  // Resolved now, so a missing package fails the start, not a user's first visit.
  const sources = Object.fromEntries(
    Object.entries(files).map(([key, f]) => {
      const path = join(packageDir(f.pkg), f.file);
      if (!existsSync(path)) throw new Error(`explorer: ${f.pkg} has no ${f.file}`);
      return [key, { path, type: f.type }];
    }),
  ) as Record<keyof typeof files, { path: string; type: string }>;

  let loaded: Promise<{ html: string; byPath: Map<string, Asset> }> | undefined;
  const load = () =>
    (loaded ??= (async () => {
      const asset = (name: string, type: string, body: Buffer): Asset => {
        const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
        // The content hash is in the path, so a file never changes under its URL.
        return { path: `${ASSET_PREFIX}/${hash}/${name}`, type, body, etag: `"${hash}"` };
      };
      const entries = await Promise.all(
        Object.entries(sources).map(async ([key, s]) => [key, asset(s.path.split('/').pop()!, s.type, await readFile(s.path))] as const),
      );
      const assets = { ...Object.fromEntries(entries), bootstrap: asset('explorer.js', JS, Buffer.from(BOOTSTRAP)) } as Parameters<typeof page>[0];
      return { html: page(assets), byPath: new Map(Object.values(assets).map((a) => [a.path, a])) };
    })().catch((err) => {
      loaded = undefined;
      throw err;
    }));

  const servePage: onRequestAsyncHookHandler = async (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return;
    const query = (req.query ?? {}) as Record<string, unknown>;
    if ('query' in query || 'extensions' in query || !prefersHtml(req.headers.accept)) return;
    const { html } = await load();
    return reply
      .code(200)
      .type('text/html; charset=utf-8')
      .headers({
        'cache-control': 'no-cache',
        vary: 'Accept',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'content-security-policy':
          "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      })
      .send(html);
  };

  let attached = false;
  app.addHook('onRoute', (route) => {
    const methods = ([] as string[]).concat(route.method);
    if (route.url !== GRAPHQL_PATH || !(methods.includes('GET') || methods.includes('HEAD'))) return;
    route.onRequest = [
      servePage,
      ...([] as Array<onRequestHookHandler | onRequestAsyncHookHandler>).concat(route.onRequest ?? []),
    ] as onRequestAsyncHookHandler[];
    attached ||= methods.includes('GET');
  });
  app.addHook('onReady', (done) => {
    done(attached ? undefined : new Error(`explorer: no GET ${GRAPHQL_PATH} route was registered after registerExplorer()`));
  });

  app.get<{ Params: { hash: string; name: string } }>(`${ASSET_PREFIX}/:hash/:name`, async (req, reply) => {
    const asset = (await load()).byPath.get(req.url.split('?')[0]);
    if (!asset) return sendProblem(reply, 'NOT_FOUND', `No explorer asset ${req.params.name}`);
    void reply.type(asset.type).headers({
      'cache-control': 'public, max-age=31536000, immutable',
      etag: asset.etag,
      vary: 'Accept-Encoding',
      'x-content-type-options': 'nosniff',
    });
    if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
      asset.gzipped ??= promisify(gzip)(asset.body);
      return reply.header('content-encoding', 'gzip').send(await asset.gzipped);
    }
    return reply.send(asset.body);
  });
}
