import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLSchema } from 'graphql';
import type { Context } from '../graphql/context';
import type { OperationGuard } from '../graphql/limits';
import { Logger } from '../log';
import { registerRest } from './adapter';
import { registerReference } from './reference';
import { routes } from './routes';

/**
 * The REST layer, plugged into the HTTP server by the composition root (app.ts), so http/ knows
 * nothing of REST: the route table's operations checked against the limits (a configuration too
 * strict for one stops the start), every route, and its reference (GET /openapi.json and /docs).
 */
export function mountRest(
  app: FastifyInstance,
  deps: { schema: GraphQLSchema; log: Logger; guard: OperationGuard; authenticate(req: FastifyRequest, reply: FastifyReply): Promise<Context> },
): void {
  for (const route of routes) deps.guard.assertWithin(`REST ${route.method} ${route.path}`, route.operation);
  registerRest(app, deps);
  registerReference(app, deps);
}
