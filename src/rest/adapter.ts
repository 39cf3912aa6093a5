import { Readable } from 'node:stream';
import { downloadLines, NDJSON, wantsNdjson } from './download';
import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DocumentNode, Kind, GraphQLError, GraphQLSchema, OperationDefinitionNode, parse, typeFromAST, validate, GraphQLInputType } from 'graphql';
import { FieldError } from '../errors';
import { Context } from '../graphql/context';
import { formatError, isErrorCode } from '../graphql/errors';
import { snake } from '../db/naming';
import { sendProblem } from '../http/problems';
import { Logger } from '../log';
import { API_RELEASES, ApiRelease, LATEST_RELEASE, presentResponse, RestRequest, Route, routes } from './routes';
import { checkInput, RestFieldError } from './validate';
import { JitExecutor } from '../graphql/jit';

interface Prepared {
  route: Route;
  document: DocumentNode;
  variableTypes: Array<[string, GraphQLInputType]>;
}

/** GraphQL names in an error field → the REST names a client sent. */
function restField(route: Route, field: string, asSent = false): string {
  const bare = field.startsWith('input.') ? field.slice('input.'.length) : field;
  if (asSent) return bare;
  if (route.fields?.[bare]) return route.fields[bare];
  const [head, ...rest] = bare.split('.');
  const bodyName = Object.entries(route.body ?? {}).find(([, gql]) => gql === head)?.[0];
  return [bodyName ?? route.fields?.[head] ?? snake(head), ...rest].join('.');
}

/** Parses and validates every route's operation; a broken row fails the start, not a request. */
export function prepareRoutes(schema: GraphQLSchema): Prepared[] {
  return routes.map((route) => {
    const document = parse(route.operation);
    const problems = validate(schema, document);
    if (problems.length) throw new Error(`REST ${route.method} ${route.path}: ${problems.map((p) => p.message).join('; ')}`);
    const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    const variableTypes = (op.variableDefinitions ?? []).map(
      (v) => [v.variable.name.value, typeFromAST(schema, v.type as never) as GraphQLInputType] as [string, GraphQLInputType],
    );
    return { route, document, variableTypes };
  });
}

type Authenticate = (req: FastifyRequest, reply: FastifyReply) => Promise<Context>;

/**
 * What every REST endpoint does before its body is even parsed: the `API-Version` check (400 for
 * an unknown release, 404 for an endpoint newer than the pinned one), the release echoed, and the
 * caller authenticated (a refused token goes to the server's error handler: 401 problem,
 * WWW-Authenticate). Resolves with the caller's context, or with the reply when it was refused.
 */
export function guardRoute(authenticate: Authenticate) {
  return (route: { method: string; path: string; since: ApiRelease }) =>
    async (req: FastifyRequest, reply: FastifyReply): Promise<Context | FastifyReply> => {
      const requested = req.headers['api-version'];
      const release = (requested ?? LATEST_RELEASE) as ApiRelease;
      if (!API_RELEASES.includes(release)) {
        return sendProblem(reply, 'BAD_REQUEST', `Unknown API-Version "${String(requested)}"; releases: ${API_RELEASES.join(', ')}`, {
          errors: [{ field: 'API-Version', message: `must be one of ${API_RELEASES.join(', ')}` }],
        });
      }
      reply.header('API-Version', release);
      if (release < route.since) return sendProblem(reply, 'NOT_FOUND', `${route.method} ${route.path} is not part of API release ${release}`);
      return authenticate(req, reply);
    };
}

export function registerRest(app: FastifyInstance, deps: { schema: GraphQLSchema; log: Logger; authenticate: Authenticate }): void {
  const contexts = new WeakMap<FastifyRequest, Context>();
  const guard = guardRoute(deps.authenticate);
  // Each route's operation compiled once (graphql-jit); its variables were checked by then (checkInput).
  const jit = new JitExecutor(deps.schema);

  for (const { route, document, variableTypes } of prepareRoutes(deps.schema)) {
    const guarded = guard(route);
    app.route({
      method: route.method,
      url: route.path,
      // Version and credentials are checked before the body is even parsed.
      onRequest: async (req, reply) => {
        const ctx = await guarded(req, reply);
        if (!('actor' in ctx)) return ctx;
        contexts.set(req, ctx);
      },
      handler: async (req, reply) => {
        const body = req.body;
        if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) {
          return sendProblem(reply, 'BAD_REQUEST', 'The request body must be a JSON object');
        }
        const fields = route.body ?? {};
        const errors: RestFieldError[] = [];
        const input: Record<string, unknown> = {};
        for (const [key, value] of Object.entries((body ?? {}) as Record<string, unknown>)) {
          if (Object.hasOwn(fields, key)) input[fields[key]] = value;
          else errors.push({ field: key, message: 'is not a known field', asSent: true });
        }
        for (const key of Object.keys(req.query as object)) {
          if (!(route.query ?? []).includes(key)) errors.push({ field: key, message: 'is not a known query parameter', asSent: true });
        }
        const restReq: RestRequest = {
          params: req.params as Record<string, string>,
          query: req.query as Record<string, unknown>,
          input,
          headers: req.headers,
        };
        const variables = route.variables(restReq);
        for (const [name, type] of variableTypes) checkInput(variables[name], type, name, errors);
        if (errors.length) {
          const named = errors.map((e) => ({ field: restField(route, e.field, e.asSent), message: e.message }));
          return sendProblem(reply, 'BAD_USER_INPUT', named.map((e) => `${e.field} ${e.message}`).join('; '), { errors: named });
        }

        const download = route.download && wantsNdjson(req.headers.accept);
        if (download && variables.limit === undefined) variables.limit = route.download!.page;
        const run = (vars: Record<string, unknown>) => jit.run(document, { contextValue: contexts.get(req), variableValues: vars });
        const result = await run(variables);
        if (result.errors?.length) return sendGraphQLError(reply, route, result.errors[0], deps.log);
        const data = result.data as Record<string, unknown>;
        for (const [name, value] of Object.entries(route.responseHeaders?.(data) ?? {})) if (value) reply.header(name, value);
        if (download)
          return reply
            .code(200)
            .type(NDJSON)
            .send(Readable.from(downloadLines(route, data, variables, run, deps.log)));
        const status = typeof route.status === 'function' ? route.status(data) : route.status;
        if (status === 204 || !route.response) return reply.code(status).send();
        return reply.code(status).send(presentResponse(route, data));
      },
    });
  }
}

function sendGraphQLError(reply: FastifyReply, route: Route, error: GraphQLError, log: Logger): FastifyReply {
  const formatted = formatError(error, error, log);
  const code = formatted.extensions?.code;
  if (!isErrorCode(code) || code === 'INTERNAL_SERVER_ERROR') {
    return sendProblem(reply, 'INTERNAL_SERVER_ERROR', 'internal error', { errorId: formatted.extensions?.errorId as string });
  }
  const fieldErrors = ((formatted.extensions?.errors as FieldError[] | undefined) ?? []).map((e) => ({
    ...e,
    field: restField(route, e.field),
  }));
  const detail = fieldErrors.length ? fieldErrors.map((e) => `${e.field} ${e.message}`).join('; ') : formatted.message;
  return sendProblem(reply, code, detail, { errors: fieldErrors });
}
