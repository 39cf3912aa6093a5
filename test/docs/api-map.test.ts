import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { renderApiMap, spliceGenerated, BEGIN, END } from '../../scripts/api-map';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { buildOpenApi } from '../../src/rest/openapi';
import { routes } from '../../src/rest/routes';
import { uploads } from '../../src/rest/uploads';

/**
 * docs/api.md's REST ↔ GraphQL map is generated from the route table (`npm run docs`), and
 * `npm run check` runs `npm run docs -- check`, which fails when the committed map differs.
 */
const root = path.join(__dirname, '..', '..');
const API_MD = path.join(root, 'docs', 'api.md');
const schema = buildGatewaySchema();
const doc = buildOpenApi(schema);
const committed = readFileSync(API_MD, 'utf8');
const generated = (text: string) => text.slice(text.indexOf(BEGIN), text.indexOf(END) + END.length);

function docsCheck(file: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-r', './scripts/register.js', 'scripts/docs.ts', 'check', file], { cwd: root, timeout: 60_000 }, (err, _stdout, stderr) =>
      resolve({ code: err ? ((err.code as number) ?? -1) : 0, stderr }),
    );
  });
}

describe('docs/api.md: the generated REST ↔ GraphQL map', () => {
  const map = renderApiMap(doc, routes, schema);
  const rowOf = (method: string, path: string) =>
    map.split('\n').find((l) => l.startsWith(`| \`${method} ${path}`) && /^[?` ]/.test(l.slice(`| \`${method} ${path}`.length)));

  it('is what `npm run docs` writes from the route table', () => {
    expect(generated(committed)).toBe(map);
    expect(spliceGenerated(committed, map)).toBe(committed);
  });

  it('has one row per route and per upload, and names every root operation either as a route’s twin, an upload’s reader or as GraphQL-only', () => {
    for (const r of [...routes, ...uploads]) expect(rowOf(r.method, r.path)).toContain(`| \`${r.since}\` |`);
    const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].flatMap((t) => Object.keys(t?.getFields() ?? {}));
    for (const name of roots) expect(map).toMatch(new RegExp(`\`${name}[(\` ]`));
  });

  it('renders a route’s body, query, header, twin and statuses', () => {
    expect(rowOf('POST', '/deploy')).toBe(
      '| `POST /deploy` `{project, env?, source?, image?}` + `Idempotency-Key` header | `deploy(input: {project, env, source, image}, idempotencyKey)` | 201, `Deployment` | `2026-01-15` |',
    );
    // A binary upload has no GraphQL twin; its row says so and names the query that reads what it stored.
    expect(rowOf('POST', '/v1/apps/:slug/sources')).toBe(
      '| `POST /v1/apps/:slug/sources` `application/gzip` body | none: GraphQL has no binary upload; read it with `source(app, id)` | 200 `Source`: The egg already had these exact bytes: that source; 201 `Source`: Stored | `2026-01-15` |',
    );
    expect(rowOf('GET', '/deployments/:id/logs')).toContain('| `deployment(id) { logs(type, since, until, tail, q, first, after) }` |');
    expect(rowOf('PATCH', '/apps/:slug/resources')).toContain('(owner only)');
    expect(rowOf('DELETE', '/v1/apps/:slug/volume')).toMatch(/\| 200 `Volume`: .*; 204: .* \|/);
  });

  it('changes when the route table changes (planted: a route removed, a release changed)', () => {
    const deleteCron = routes.find((r) => r.method === 'DELETE' && r.path === '/v1/apps/:slug/crons/:id')!;
    const without = renderApiMap(
      doc,
      routes.filter((r) => r !== deleteCron),
      schema,
    );
    expect(without).not.toContain('`DELETE /v1/apps/:slug/crons/:id`');
    expect(without).toMatch(/\| mutations \| .*`deleteCron\(/);
    expect(spliceGenerated(committed, without)).not.toBe(committed);
    // Without the upload, its row goes and its reader becomes a GraphQL-only query.
    const noUploads = renderApiMap(doc, routes, schema, []);
    expect(noUploads).not.toContain('`POST /v1/apps/:slug/sources`');
    expect(noUploads).toMatch(/\| queries \| .*`source\(/);

    const renamed = routes.map((r) => (r === deleteCron ? { ...r, since: '2026-09-01' as const } : r));
    expect(renderApiMap(doc, renamed, schema)).not.toBe(map);
  });

  it('`npm run docs -- check` passes on the committed page and fails on planted drift or missing markers', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'docs-check-'));
    try {
      const write = (name: string, text: string) => {
        const file = path.join(dir, name);
        writeFileSync(file, text);
        return file;
      };
      expect(await docsCheck(write('same.md', committed))).toEqual({ code: 0, stderr: '' });

      const edited = committed.replace(/^\| `DELETE \/deployments\/:id` \|.*\n/m, '');
      expect(edited).not.toBe(committed);
      const drift = await docsCheck(write('edited.md', edited));
      expect(drift.code).toBe(1);
      expect(drift.stderr).toContain('docs drift');

      const noMarkers = await docsCheck(write('no-markers.md', committed.replace(END, '')));
      expect(noMarkers.code).not.toBe(0);
      expect(noMarkers.stderr).toContain('markers are missing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
