import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FieldError, RateLimited } from '../errors';
import type { Context } from '../graphql/context';
import { sendProblem } from '../http/problems';
import { Logger } from '../log';
import { Resource } from './define-resource';
import * as resources from './resources';
import { ApiRelease } from './routes';

/**
 * REST endpoints that take a binary body, which a GraphQL operation cannot carry (GraphQL has no
 * file upload), so they are not rows of the route table: each calls its service directly, with
 * the table's API-Version check, authentication, rate limits, request ids and problem+json errors
 * (`guardRoute` of adapter.ts). Each names a GraphQL operation that reads what it stored (`reader`):
 * the parity test holds its answer to the upload's, and the OpenAPI document and docs/api.md list
 * it as the way to see it from GraphQL.
 */
export interface UploadRoute {
  method: 'POST';
  /** Fastify path syntax, like the route table's. */
  path: string;
  /** The only media type the body may have; anything else is a 415. */
  mediaType: string;
  /** What the body is, for the API reference. */
  bodyDescription: string;
  /** The REST name of the body in errors (`errors[].field`). */
  field: string;
  since: ApiRelease;
  summary: string;
  /** The endpoint's description in the API reference. */
  description: string;
  response: Resource;
  statuses: Readonly<Record<200 | 201, string>>;
  /** A GraphQL query answering the stored record; `$`-variables from the path and the record's id. */
  reader: string;
  readerVariables(params: Record<string, string>, stored: { id: string }): Record<string, unknown>;
  /** Stores the body; `created` false when it was already stored (same bytes). */
  store(
    ctx: Context,
    params: Record<string, string>,
    body: AsyncIterable<Buffer>,
    declaredBytes: number | null,
  ): Promise<{ record: unknown; created: boolean }>;
}

export const uploads: UploadRoute[] = [
  {
    method: 'POST',
    path: '/v1/apps/:slug/sources',
    mediaType: 'application/gzip',
    bodyDescription:
      'A .tar.gz of the egg’s folder: files, directories and links that stay inside it (no absolute or `..` paths, devices or FIFOs), at most `HATCHERY_SOURCE_MAX_MB` (100 by default) compressed and unpacked.',
    field: 'source',
    since: '2026-01-15',
    summary: 'Upload a source (.tar.gz)',
    description:
      'Stores a .tar.gz of the egg’s folder for `POST /deploy` to build (`source`). Content-addressed per egg: the same bytes again answer 200 with the same source. ' +
      'An archive that is not sound or would unpack outside its folder is refused (422 on `source`) and nothing is stored; a body that is not gzip, or not sent as `application/gzip`, is a 415; ' +
      'one over `HATCHERY_SOURCE_MAX_MB` compressed is a 413. Sources no deployment references are removed after `HATCHERY_SOURCE_RETENTION_MS` (24 hours by default); each egg’s newest is kept.',
    response: resources.Source,
    statuses: { 201: 'Stored', 200: 'The egg already had these exact bytes: that source' },
    reader: /* GraphQL */ `
      query RestSource($slug: String!, $id: ID!) {
        source(app: $slug, id: $id) {
          ...RestSource
        }
      }
      ${resources.Source.fragment}
    `,
    readerVariables: (params, stored) => ({ slug: params.slug, id: stored.id }),
    store: async (ctx, params, body, declaredBytes) => {
      const { source, created } = await ctx.services.sources.upload(ctx.actor, params.slug, body, declaredBytes);
      return { record: source, created };
    },
  },
];

/** How long a refused upload's connection goes on reading, silent, before it is cut. */
export const LINGER_IDLE_MS = 2000;
/** And in all: past this it is cut even while the client is still sending. */
export const LINGER_MAX_MS = 30_000;

/**
 * A refusal sent before the body was read must not be lost. Closing the socket with the client's
 * bytes unread makes the kernel answer them with a reset, which can reach the client before it
 * has read the refusal (it sees EPIPE or ECONNRESET instead of the 413). So the close is staged
 * (RFC 9112 §9.6, nginx's lingering close): after the response, only our sending side closes, the
 * rest of the body is read and discarded, and the socket goes once the client closes its side,
 * after `LINGER_IDLE_MS` without a byte, or after `LINGER_MAX_MS` in all.
 */
function closeAfterDraining(req: IncomingMessage): void {
  const socket = req.socket;
  req.resume(); // the body's bytes, read and dropped
  const cut = () => socket.destroy();
  let idle: NodeJS.Timeout | undefined;
  const quiet = () => {
    if (idle) idle.refresh();
    else idle = setTimeout(cut, LINGER_IDLE_MS).unref();
  };
  const max = setTimeout(cut, LINGER_MAX_MS).unref();
  // Node's server calls destroySoon() once a `connection: close` response is sent: a half-close instead.
  let staged = false;
  socket.destroySoon = () => {
    if (staged) return;
    staged = true;
    socket.on('data', quiet);
    quiet();
    socket.end();
    socket.resume();
  };
  socket.once('close', () => {
    clearTimeout(idle);
    clearTimeout(max);
  });
}

/** `Content-Length` as a number, when the client sent a sound one. */
function declaredLength(req: FastifyRequest): number | null {
  const raw = req.headers['content-length'];
  return typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : null;
}

export function registerUploads(
  app: FastifyInstance,
  deps: {
    log: Logger;
    guard(route: { method: string; path: string; since: ApiRelease }): (req: FastifyRequest, reply: FastifyReply) => Promise<Context | FastifyReply>;
  },
): void {
  for (const route of uploads) {
    const wrongType = `Send the body as ${route.mediaType}`;
    const mediaError: FieldError[] = [{ field: 'Content-Type', message: `must be ${route.mediaType}` }];
    void app.register((scope, _opts, done) => {
      // Only this media type, handed over unread: the service streams it.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(route.mediaType, (_req, payload, parsed) => parsed(null, payload));
      scope.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
        if (err.statusCode === 415) return sendProblem(reply, 'UNSUPPORTED_MEDIA_TYPE', wrongType, { errors: mediaError });
        throw err; // the server's own handler: problem bodies for everything else
      });
      const contexts = new WeakMap<FastifyRequest, Context>();
      const guard = deps.guard(route);
      scope.route({
        method: route.method,
        url: route.path,
        onRequest: async (req, reply) => {
          const ctx = await guard(req, reply);
          if ('actor' in ctx) contexts.set(req, ctx);
        },
        handler: async (req, reply) => {
          const unknown = Object.keys(req.query as object).map((key) => ({ field: key, message: 'is not a known query parameter' }));
          if (unknown.length) return sendProblem(reply, 'BAD_USER_INPUT', unknown.map((e) => `${e.field} ${e.message}`).join('; '), { errors: unknown });
          const body = req.body;
          if (!(body instanceof Readable)) return sendProblem(reply, 'UNSUPPORTED_MEDIA_TYPE', wrongType, { errors: mediaError });
          try {
            // Not destroyed when the service stops reading early: the refusal still has to be sent.
            const chunks = body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
            const { record, created } = await route.store(contexts.get(req)!, req.params as Record<string, string>, chunks, declaredLength(req));
            return reply.code(created ? 201 : 200).send(route.response.present(record));
          } catch (err) {
            if (req.raw.socket?.destroyed) {
              // The client went away (or the request timed out): nobody to answer.
              deps.log.info({ reqId: req.id }, 'upload cut off before it arrived whole');
              return reply.hijack();
            }
            // The rest of the body is not read: the connection cannot carry another request.
            if (!body.readableEnded) {
              reply.header('connection', 'close');
              closeAfterDraining(req.raw);
            }
            if (err instanceof RateLimited) reply.header('retry-after', String(err.retryAfterSeconds));
            throw err;
          }
        },
      });
      done();
    });
  }
}
