import { FastifyInstance } from 'fastify';
import { GraphQLSchema } from 'graphql';
import { buildOpenApi, JsonSchema, OpenApiDocument, OpenApiOperation } from './openapi';

/**
 * GET /openapi.json (the REST layer's OpenAPI 3.1 document) and GET /docs (a reference page
 * rendered from it on the server: no script, nothing loaded from anywhere). Both are public.
 * Built once at start, so a route row the generator cannot describe fails the start.
 */
/** A document's text field, or nothing. */
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

export function registerReference(app: FastifyInstance, deps: { schema: GraphQLSchema }): void {
  const doc = buildOpenApi(deps.schema);
  const json = JSON.stringify(doc);
  const html = renderReference(doc);
  app.get('/openapi.json', async (_req, reply) => reply.type('application/json; charset=utf-8').header('cache-control', 'no-cache').send(json));
  app.get('/docs', async (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
      .send(html),
  );
}

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The little Markdown the document's descriptions use: paragraphs, `- ` lists, `code`, **bold**. */
function markdown(text: string): string {
  const inline = (s: string) =>
    esc(s)
      .replace(/`([^`]+)`/g, '<code>$1</code>')
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  return text
    .split(/\n\s*\n/)
    .map((block) => {
      const lines = block.split('\n');
      if (lines[0].startsWith('- ')) {
        const items: string[] = [];
        for (const line of lines) {
          if (line.startsWith('- ')) items.push(line.slice(2));
          else items[items.length - 1] += ` ${line.trim()}`;
        }
        return `<ul>${items.map((i) => `<li>${inline(i)}</li>`).join('')}</ul>`;
      }
      return `<p>${inline(lines.join(' '))}</p>`;
    })
    .join('\n');
}

const schemaName = (ref: unknown) => (typeof ref === 'string' ? ref.replace('#/components/schemas/', '') : '');

function typeLabel(schema: JsonSchema): string {
  if (typeof schema.$ref === 'string') {
    const name = schemaName(schema.$ref);
    return `<a href="#schema-${esc(name)}">${esc(name)}</a>`;
  }
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as JsonSchema[]).map(typeLabel).join(' | ');
  if (Array.isArray(schema.allOf)) return typeLabel((schema.allOf as JsonSchema[])[0]);
  if ('const' in schema) return `<code>${esc(JSON.stringify(schema.const))}</code>`;
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(' | ');
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [typeof schema.type === 'string' ? schema.type : 'any'];
  return types
    .map((t) => {
      if (t === 'array') return `array of ${typeLabel((schema.items ?? {}) as JsonSchema)}`;
      return schema.format && t !== 'null' ? `${t} (${esc(schema.format)})` : t;
    })
    .join(' | ');
}

function constraints(schema: JsonSchema): string {
  const parts: string[] = [];
  if (typeof schema.pattern === 'string') parts.push(`pattern <code>${esc(schema.pattern)}</code>`);
  if (typeof schema.minimum === 'number') parts.push(`at least ${schema.minimum}`);
  if (schema.default !== undefined) parts.push(`default <code>${esc(JSON.stringify(schema.default))}</code>`);
  return parts.length ? `<br><small>${parts.join('; ')}</small>` : '';
}

function fieldTable(schema: JsonSchema): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  if (!Object.keys(properties).length) return '<p class="none">No fields.</p>';
  const rows = Object.entries(properties).map(
    ([name, prop]) =>
      `<tr><td><code>${esc(name)}</code></td><td>${typeLabel(prop)}${constraints(prop)}</td><td>${required.has(name) ? 'yes' : 'no'}</td>` +
      `<td>${markdown(text(prop.description))}</td></tr>`,
  );
  return `<table><thead><tr><th>field</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function resolve(doc: OpenApiDocument, obj: JsonSchema): JsonSchema {
  const target = obj.$ref;
  if (typeof target !== 'string') return obj;
  const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(target) ?? [];
  return resolve(doc, (doc.components as Record<string, Record<string, JsonSchema>>)[section][name]);
}

function renderOperation(doc: OpenApiDocument, method: string, path: string, op: OpenApiOperation): string {
  const params = op.parameters.map((p) => resolve(doc, p));
  const paramRows = params.map(
    (p) =>
      `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${typeLabel(p.schema as JsonSchema)}${constraints(p.schema as JsonSchema)}</td>` +
      `<td>${p.required ? 'yes' : 'no'}</td><td>${markdown(text(p.description))}</td></tr>`,
  );
  const body = op.requestBody as { required?: boolean; description?: string; content: Record<string, { schema: JsonSchema }> } | undefined;
  const bodyHtml = body
    ? Object.entries(body.content)
        .map(
          ([type, media]) =>
            `<h4>Request body <small><code>${esc(type)}</code>${body.required ? ', required' : ', optional'}</small></h4>` +
            (body.description ? markdown(body.description) : '') +
            // A binary body (an upload) has no fields: its bytes are the media type.
            (media.schema.type === 'object' ? fieldTable(media.schema) : `<p>The raw bytes, <code>${esc(type)}</code>.</p>`),
        )
        .join('')
    : '';
  const responses = Object.entries(op.responses).map(([status, declared]) => {
    const r = resolve(doc, declared);
    const content = (r.content ?? {}) as Record<string, { schema: JsonSchema }>;
    const bodies = Object.entries(content).map(([type, media]) => `${typeLabel(media.schema)} <small><code>${esc(type)}</code></small>`);
    const headers = Object.keys(r.headers ?? {}).map((h) => `<code>${esc(h)}</code>`);
    return (
      `<tr><td class="status s${esc(status[0])}">${esc(status)}</td><td>${markdown(text(r.description))}</td>` +
      `<td>${bodies.join('<br>') || '<span class="none">no body</span>'}</td><td>${headers.join(', ')}</td></tr>`
    );
  });
  return `<article class="op" id="op-${esc(op.operationId)}">
<h3><span class="method m-${esc(method)}">${esc(method.toUpperCase())}</span> <code class="path">${esc(path)}</code> <span class="summary">${esc(op.summary)}</span></h3>
${markdown(op.description)}
<p class="meta">operation <code>${esc(op.operationId)}</code> · release <code>${esc(op['x-hatchery-since'])}</code>+ · bearer token required</p>
<h4>Parameters</h4>
<table><thead><tr><th>name</th><th>in</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>${paramRows.join('')}</tbody></table>
${bodyHtml}
<h4>Responses</h4>
<table><thead><tr><th>status</th><th>meaning</th><th>body</th><th>headers</th></tr></thead><tbody>${responses.join('')}</tbody></table>
</article>`;
}

const STYLE = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#fafbfc}
main{max-width:1100px;margin:0 auto;padding:1.5rem 2rem 4rem}
nav{background:#1d2330;color:#fff;padding:1rem 2rem}nav a{color:#cfe3ff;margin-right:1rem}nav code{background:none;color:inherit}
h1{margin:.2rem 0}h2{border-bottom:2px solid #d8dee8;padding-bottom:.3rem;margin-top:2.5rem}
article.op,section.schema{background:#fff;border:1px solid #d8dee8;border-radius:6px;padding:.5rem 1.2rem 1rem;margin:1.2rem 0}
table{border-collapse:collapse;width:100%;margin:.4rem 0 1rem;font-size:14px}
th,td{border:1px solid #e3e7ee;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f2f4f8}
td p,td ul{margin:0}code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f2f4f8;padding:0 .2rem;border-radius:3px}
.method{display:inline-block;min-width:4.2rem;text-align:center;border-radius:4px;color:#fff;font-size:13px;padding:.1rem .4rem}
.m-get{background:#2f7d32}.m-post{background:#1f5fbf}.m-patch{background:#a86500}.m-delete{background:#b3261e}
.summary{font-weight:normal;color:#55607a;font-size:15px;margin-left:.4rem}.meta{color:#55607a;font-size:13px}
.status{font-weight:bold}.s2{color:#2f7d32}.s4{color:#a86500}.s5{color:#b3261e}.none{color:#8a93a6}
ul.toc{columns:2}`;

/** The API reference page: every operation with its parameters, body fields and responses. */
export function renderReference(doc: OpenApiDocument): string {
  const byTag = new Map<string, Array<[string, string, OpenApiOperation]>>(doc.tags.map((t) => [t.name, []]));
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = op.tags[0];
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push([method, path, op]);
    }
  }
  const toc = [...byTag].map(
    ([tag, ops]) =>
      `<li><a href="#tag-${esc(tag)}">${esc(tag)}</a><ul>${ops
        .map(([m, p, op]) => `<li><a href="#op-${esc(op.operationId)}"><code>${esc(m.toUpperCase())} ${esc(p)}</code></a></li>`)
        .join('')}</ul></li>`,
  );
  const sections = [...byTag].map(
    ([tag, ops]) => `<section id="tag-${esc(tag)}"><h2>${esc(tag)}</h2>${ops.map(([m, p, op]) => renderOperation(doc, m, p, op)).join('\n')}</section>`,
  );
  const schemas = Object.entries(doc.components.schemas).map(
    ([name, schema]) =>
      `<section class="schema" id="schema-${esc(name)}"><h3>${esc(name)}</h3>${markdown(text(schema.description))}` +
      (schema.properties ? fieldTable(schema) : `<p>${typeLabel(schema)}${constraints(schema)}</p>`) +
      `</section>`,
  );
  const info = doc.info as { title: string; version: string; description: string };
  const auth = Object.entries(doc.components.securitySchemes)
    .map(([name, s]) => `<p><code>${esc(name)}</code>: <code>Authorization: Bearer &lt;token&gt;</code>. ${markdown(text(s.description))}</p>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(info.title)} reference</title><style>${STYLE}</style></head>
<body><nav><strong>${esc(info.title)}</strong> · release <code>${esc(info.version)}</code> · <a href="/openapi.json">openapi.json</a></nav>
<main>
<h1>${esc(info.title)}</h1>
${markdown(info.description)}
<h2 id="auth">Authentication</h2>${auth}
<h2 id="contents">Endpoints</h2><ul class="toc">${toc.join('')}</ul>
${sections.join('\n')}
<h2 id="schemas">Schemas</h2>
${schemas.join('\n')}
</main></body></html>
`;
}
