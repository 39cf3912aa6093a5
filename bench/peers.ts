/**
 * The GraphQL peers of `npm run bench` (the `peers` phase), on the same database and rows as the
 * gateway: PostGraphile 4 as a library on a bare node http server, and mercurius with graphql-jit
 * on Fastify running the gateway's SQL. See docs/benchmarks.md.
 */
import http from 'node:http';
import Module from 'node:module';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import Fastify from 'fastify';
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLID,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLNullableType,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
} from 'graphql';
import mercurius from 'mercurius';
import { Pool } from 'pg';
import type { postgraphile as Postgraphile } from 'postgraphile';
import { cachedViewer, type Server, visibleDeployments } from './baseline';

/**
 * PostGraphile 4 needs graphql 15 and the gateway graphql 16, so npm installs graphql 15 (and
 * graphile-build, which must share it) more than once: under postgraphile/ and under
 * graphile-build-pg/, while graphql-parse-resolve-info sees the top-level graphql 16. A schema
 * built from two copies fails ("Cannot use GraphQLList … from another module or realm"). This
 * resolves `graphql` and `graphile-build` for PostGraphile's packages from postgraphile/ alone:
 * one copy of each, as a tree without the gateway's graphql 16 would have.
 */
function loadPostGraphile(): typeof Postgraphile {
  const root = path.dirname(require.resolve('postgraphile/package.json'));
  const anchor = path.join(root, 'package.json');
  const fromPostGraphile = Module.createRequire(anchor);
  const graphile = /[\\/]node_modules[\\/](postgraphile|postgraphile-core|graphile-build|graphile-build-pg|graphile-utils|graphql-parse-resolve-info)[\\/]/;
  type Resolve = (this: unknown, request: string, parent: { filename?: string } | undefined, ...rest: unknown[]) => string;
  const M = Module as unknown as { _resolveFilename: Resolve };
  if (!(M._resolveFilename as { peers?: boolean }).peers) {
    const resolve = M._resolveFilename;
    const patched = function (this: unknown, request: string, parent: { filename?: string } | undefined, ...rest: unknown[]) {
      const shared = request === 'graphql' || request.startsWith('graphql/') || request === 'graphile-build';
      if (shared && parent?.filename && parent.filename !== anchor && graphile.test(parent.filename)) return fromPostGraphile.resolve(request);
      return resolve.call(this, request, parent, ...rest);
    };
    M._resolveFilename = Object.assign(patched, { peers: true });
  }
  return (Module.createRequire(__filename)('postgraphile') as { postgraphile: typeof Postgraphile }).postgraphile;
}

/**
 * PostGraphile 4 over the `public` schema, as its docs set it up for production (no GraphiQL, no
 * query log, no schema watching), on its own pool of the gateway's size. No authentication and no
 * visibility: every row of the table is readable.
 */
export async function startPostGraphile(databaseUrl: string, poolSize = 10): Promise<Server> {
  const postgraphile = loadPostGraphile();
  const pool = new Pool({ connectionString: databaseUrl, max: poolSize });
  const handler = postgraphile(pool, 'public', {
    graphiql: false,
    disableQueryLog: true,
    watchPg: false,
    retryOnInitFail: false,
    enableQueryBatching: false,
    setofFunctionsContainNulls: false,
    ignoreRBAC: false,
  });
  await handler.getGraphQLSchema(); // introspected and built before the first request is timed
  const server = http.createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await handler.release();
      await pool.end();
    },
  };
}

/** PostGraphile's spelling of the gateway's list (GQL_LIST in bench/run.ts): the same fields. */
export const POSTGRAPHILE_LIST = `query PeerDeployments($appId: String!, $first: Int) {
  allDeployments(first: $first, condition: { appId: $appId }, orderBy: PRIMARY_KEY_DESC) {
    nodes { id status url createdAt updatedAt finishedAt memoryMb volumeMb envKeys failureReason appByAppId { slug } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** The gateway's list, answered by mercurius (same operation text as GQL_LIST). */
interface Viewer {
  id: string;
}

interface DeploymentRow {
  id: string;
  appId: string;
  /** Its egg, read in the same statement (as the gateway's list reads it). */
  app: { id: string; slug: string };
  status: string;
  url: string;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  memoryMb: number;
  volumeMb: number | null;
  envKeys: string[];
  failureReason: string | null;
}

const DateTime = new GraphQLScalarType({
  name: 'DateTime',
  serialize: (v) => (v instanceof Date ? v.toISOString() : String(v)),
});

const Status = new GraphQLEnumType({
  name: 'DeploymentStatus',
  values: { BUILDING: { value: 'building' }, LIVE: { value: 'live' }, FAILED: { value: 'failed' } },
});

const App = new GraphQLObjectType({
  name: 'App',
  fields: { id: { type: new GraphQLNonNull(GraphQLID) }, slug: { type: new GraphQLNonNull(GraphQLString) } },
});

const nonNull = <T extends GraphQLNullableType>(t: T) => new GraphQLNonNull(t);

const Deployment = new GraphQLObjectType<DeploymentRow>({
  name: 'Deployment',
  fields: {
    id: { type: nonNull(GraphQLID) },
    status: { type: nonNull(Status) },
    url: { type: nonNull(GraphQLString) },
    createdAt: { type: nonNull(DateTime) },
    updatedAt: { type: nonNull(DateTime) },
    finishedAt: { type: DateTime },
    memoryMb: { type: nonNull(GraphQLInt) },
    volumeMb: { type: GraphQLInt },
    envKeys: { type: nonNull(new GraphQLList(nonNull(GraphQLString))) },
    failureReason: { type: GraphQLString },
    app: { type: nonNull(App) }, // joined in by the list statement
  },
});

const PageInfo = new GraphQLObjectType({
  name: 'PageInfo',
  fields: { hasNextPage: { type: nonNull(GraphQLBoolean) }, endCursor: { type: GraphQLString } },
});

const Connection = new GraphQLObjectType({
  name: 'DeploymentConnection',
  fields: { nodes: { type: nonNull(new GraphQLList(nonNull(Deployment))) }, pageInfo: { type: nonNull(PageInfo) } },
});

/**
 * mercurius (graphql-jit on every operation: `jit: 1`) on Fastify: `deployments(first)` with the
 * gateway's statements (the token lookup kept 250 ms, the visible deployments with their eggs
 * joined in, both prepared), hydrated by hand.
 */
export async function startMercurius(pool: Pool): Promise<Server> {
  const viewerOf = cachedViewer(pool);
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType<unknown, { viewer: Viewer }>({
      name: 'Query',
      fields: {
        deployments: {
          type: nonNull(Connection),
          args: { first: { type: GraphQLInt } },
          resolve: async (_root, args: { first?: number | null }, ctx) => {
            const limit = args.first ?? 20;
            if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new Error('first must be 1 to 100');
            const rows = await visibleDeployments(pool, ctx.viewer.id, limit + 1);
            const nodes: DeploymentRow[] = rows.slice(0, limit).map((d) => ({
              id: d.id,
              appId: d.app_id,
              app: { id: d.ja__id, slug: d.ja__slug },
              status: d.status,
              url: d.url,
              createdAt: d.created_at,
              updatedAt: d.updated_at,
              finishedAt: d.finished_at,
              memoryMb: d.memory_mb,
              volumeMb: d.volume_mb,
              envKeys: d.env_keys,
              failureReason: d.failure_reason,
            }));
            const last = nodes[nodes.length - 1];
            return {
              nodes,
              pageInfo: { hasNextPage: rows.length > limit, endCursor: last ? Buffer.from(last.id).toString('base64url') : null },
            };
          },
        },
      },
    }),
  });
  const app = Fastify({ logger: false });
  await app.register(mercurius, {
    schema,
    jit: 1,
    context: async (req): Promise<{ viewer: Viewer }> => {
      const viewer = await viewerOf(req.headers.authorization);
      if (!viewer) throw new Error('unauthorized');
      return { viewer };
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}
