import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLSchema, parse, validate } from 'graphql';
import type { Context } from '../graphql/context';
import type { OperationGuard } from '../graphql/limits';
import { Logger } from '../log';
import { guardRoute, registerRest } from './adapter';
import { registerReference } from './reference';
import { routes } from './routes';
import { registerUploads, uploads } from './uploads';

/**
 * The REST layer, plugged into the HTTP server by the composition root (app.ts), so http/ knows
 * nothing of REST: the route table's operations checked against the limits (a configuration too
 * strict for one stops the start), every route, the binary uploads (uploads.ts), and their reference (GET /openapi.json and /docs).
 */
export function mountRest(
  app: FastifyInstance,
  deps: { schema: GraphQLSchema; log: Logger; guard: OperationGuard; authenticate(req: FastifyRequest, reply: FastifyReply): Promise<Context> },
): void {
  for (const route of routes) deps.guard.assertWithin(`REST ${route.method} ${route.path}`, route.operation);
  for (const upload of uploads) {
    const problems = validate(deps.schema, parse(upload.reader));
    if (problems.length) throw new Error(`REST ${upload.method} ${upload.path} reader: ${problems.map((p) => p.message).join('; ')}`);
    deps.guard.assertWithin(`REST ${upload.method} ${upload.path} reader`, upload.reader);
  }
  registerRest(app, deps);
  registerUploads(app, { log: deps.log, guard: guardRoute((req, reply) => deps.authenticate(req, reply)) });
  registerReference(app, deps);
}
