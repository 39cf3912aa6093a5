/**
 * The baselines of `npm run bench`: the least code that does the same work as the gateway, on
 * the same database, so each gateway figure is a ratio that the machine's speed cancels out of.
 */
import { createHash } from 'node:crypto';
import { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Pool } from 'pg';
import { WebSocket, WebSocketServer } from 'ws';

export interface Server {
  url: string;
  close(): Promise<void>;
}

const iso = (v: Date | null) => (v ? v.toISOString() : null);

/** The account a `Bearer` token belongs to, as the gateway looks it up (one statement); null when refused. */
export async function bearerViewer(pool: Pool, authorization: string | undefined): Promise<{ id: string } | null> {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) return null;
  const hash = createHash('sha256').update(m[1]).digest('hex');
  const auth = await pool.query({
    name: 'bare_token',
    text: `SELECT t.id AS token_id, t.expires_at AS token_expires_at, t.last_used_at AS token_last_used_at, u.*
             FROM api_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
    values: [hash],
  });
  const viewer = auth.rows[0] as { id: string; token_expires_at: Date | null } | undefined;
  return viewer && !(viewer.token_expires_at && viewer.token_expires_at <= new Date()) ? { id: viewer.id } : null;
}

/**
 * `bearerViewer` with the gateway's token cache: a lookup kept for `keepMs` (HATCHERY_TOKEN_CACHE_MS,
 * 250 by default), so that, like the gateway, a busy client's requests mostly run no token statement.
 */
export function cachedViewer(pool: Pool, keepMs = 250): (authorization: string | undefined) => Promise<{ id: string } | null> {
  const kept = new Map<string, { viewer: { id: string }; until: number }>();
  return async (authorization) => {
    const key = authorization ?? '';
    const hit = kept.get(key);
    if (hit && hit.until > performance.now()) return hit.viewer;
    const viewer = await bearerViewer(pool, authorization);
    if (viewer) kept.set(key, { viewer, until: performance.now() + keepMs });
    else kept.delete(key);
    return viewer;
  };
}

/** The egg's columns, named apart from the deployment's, as the gateway's list joins them. */
const APP_COLUMNS = ['id', 'slug', 'owner_id', 'tier', 'memory_mb', 'replicas', 'current_deployment_id', 'runner_id', 'runner_lease_until', 'created_at'];

/**
 * The gateway's list statement (DeploymentsService.list): the viewer's visible deployments, newest
 * first, each with its egg joined in, one prepared statement.
 */
export async function visibleDeployments(pool: Pool, viewerId: string, limit: number): Promise<Array<Record<string, any>>> {
  const { rows } = await pool.query({
    name: 'bare_list',
    text: `SELECT d.*, ${APP_COLUMNS.map((c) => `ja.${c} AS ja__${c}`).join(', ')}
             FROM deployments d JOIN apps ja ON ja.id = d.app_id
            WHERE d.app_id IN (SELECT a.id FROM apps a WHERE a.owner_id = $1 UNION SELECT c.app_id FROM collaborators c WHERE c.user_id = $1)
            ORDER BY d.id DESC LIMIT $2`,
    values: [viewerId, limit],
  });
  return rows;
}

/**
 * GET /deployments?limit=N with bare Fastify and `pg`, running the gateway's statements: the token
 * lookup (kept 250 ms, as the gateway keeps it) and the list with the eggs joined in, both
 * prepared; answering the gateway's REST shape.
 */
export async function startBaselineHttp(pool: Pool): Promise<Server & { server: import('node:http').Server }> {
  const viewerOf = cachedViewer(pool);
  const app = Fastify({ logger: false });
  app.get('/deployments', async (req, reply) => {
    const viewer = await viewerOf(req.headers.authorization);
    if (!viewer) return reply.code(401).send({ code: 'unauthorized' });
    const limit = Number((req.query as Record<string, string>).limit ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return reply.code(422).send({ code: 'validation_failed' });
    const rows = await visibleDeployments(pool, viewer.id, limit + 1);
    const page = rows.slice(0, limit);
    return {
      data: page.map((d) => ({
        id: d.id,
        project: d.ja__slug,
        status: d.status,
        url: d.url,
        created_at: iso(d.created_at),
        updated_at: iso(d.updated_at),
        finished_at: iso(d.finished_at),
        memory_mb: d.memory_mb,
        volume_mb: d.volume_mb,
        env_keys: d.env_keys,
        failure_reason: d.failure_reason,
      })),
      has_more: rows.length > limit,
      next_cursor: rows.length > limit ? Buffer.from(page[page.length - 1].id).toString('base64url') : null,
    };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close(), server: app.server };
}

export interface LogLineMessage {
  seq: number;
  timestamp: string;
  type: string;
  message: string;
}

export interface Broadcast extends Server {
  /** Sends one log line to every subscriber (batched: at the next flush). */
  send(line: LogLineMessage): void;
  /** Sends the lines not sent yet (batched mode). */
  flush(): void;
  subscribers(): number;
}

/**
 * A bare `ws` broadcast speaking just enough graphql-ws (ack, subscribe, next) for the same
 * subscribers to read it: one JSON text per message, encoded once and written to every socket. `field` is the
 * subscription field the lines come under: `deploymentLogs` sends each line as it comes,
 * `deploymentLogBatches` the lines of every `flushMs` (at most `maxBatch`) in one message, as
 * the gateway's log writer does.
 */
export async function startBaselineWs(field: 'deploymentLogs' | 'deploymentLogBatches', flushMs = 25, maxBatch = 500): Promise<Broadcast> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const subscribed = new Map<WebSocket, string>();
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const msg = JSON.parse(
        Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8'),
      );
      if (msg.type === 'connection_init') ws.send('{"type":"connection_ack"}');
      else if (msg.type === 'subscribe') subscribed.set(ws, msg.id);
      else if (msg.type === 'ping') ws.send('{"type":"pong"}');
    });
    ws.on('close', () => subscribed.delete(ws));
  });
  // Each message encoded once (per subscription id) and the same bytes written to every socket.
  const broadcast = (data: unknown) => {
    const byId = new Map<string, Buffer>();
    for (const [ws, id] of subscribed) {
      let bytes = byId.get(id);
      if (bytes === undefined) {
        bytes = Buffer.from(JSON.stringify({ id, type: 'next', payload: { data: { [field]: data } } }));
        byId.set(id, bytes);
      }
      ws.send(bytes, { binary: false });
    }
  };
  let pending: LogLineMessage[] = [];
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending.length) broadcast(pending);
    pending = [];
  };
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/graphql`,
    send(line) {
      if (field === 'deploymentLogs') return broadcast(line);
      pending.push(line);
      if (pending.length >= maxBatch) flush();
      else if (!timer) timer = setTimeout(flush, flushMs);
    },
    flush,
    subscribers: () => subscribed.size,
    close: () =>
      new Promise<void>((resolve) => {
        flush();
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => resolve());
      }),
  };
}

/** Log ingestion without the gateway: the same rows, batched into one unnest INSERT per batch. */
export async function bareInsert(pool: Pool, deploymentId: string, lines: number, batch: number, seqStart = 0): Promise<number> {
  const client = await pool.connect();
  try {
    const started = performance.now();
    for (let from = 0; from < lines; from += batch) {
      const n = Math.min(batch, lines - from);
      const seqs: number[] = [];
      const stamps: string[] = [];
      const types: string[] = [];
      const messages: string[] = [];
      for (let i = 0; i < n; i++) {
        seqs.push(seqStart + from + i + 1);
        stamps.push(new Date().toISOString());
        types.push('runtime');
        messages.push(ingestMessage(from + i));
      }
      await client.query(
        `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message)
         SELECT $1, (SELECT app_id FROM deployments WHERE id = $1), u.s, u.t, u.ty, u.m FROM unnest($2::int[], $3::timestamptz[], $4::text[], $5::text[]) AS u(s, t, ty, m)`,
        [deploymentId, seqs, stamps, types, messages],
      );
    }
    return performance.now() - started;
  } finally {
    client.release();
  }
}

/** A typical access-log line, the same for the gateway and the baseline. */
export function ingestMessage(i: number): string {
  return `GET /api/items/${i} 200 ${(i % 97) + 3}ms ua="Mozilla/5.0" ip=10.0.${i % 256}.${(i * 7) % 256}`;
}
