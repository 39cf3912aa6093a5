import { GraphQLFieldResolver, GraphQLSchema, isObjectType } from 'graphql';
import { getMetadataStorage } from 'type-graphql';

type Method = (...params: unknown[]) => unknown;
/** A class, as type-graphql's metadata names resolvers and types. */
type Class = abstract new (...args: never[]) => unknown;

const direct = new WeakSet<GraphQLFieldResolver<unknown, unknown>>();
/** Whether `callFieldResolversDirectly` gave the field its resolver. */
export const isCalledDirectly = (resolve: GraphQLFieldResolver<never, never> | undefined): boolean =>
  resolve !== undefined && direct.has(resolve as GraphQLFieldResolver<unknown, unknown>);

/**
 * Calls the field resolvers that take only their root and the context (a deployment's `app` and
 * `source`, an egg's `currentDeployment`…) directly. type-graphql calls each through a wrapper that
 * asks its container for the resolver, sorts and maps the parameters' metadata and converts the
 * root, for every field of every row: in a list of 20 deployments that was 4 % of the request's
 * CPU. The direct call does what the wrapper did for these fields, in the same order: the
 * parameters by position, the root as it is when it is already of the field's type (otherwise the
 * field keeps type-graphql's resolver, which converts it). A field with middlewares, roles,
 * arguments or any other parameter keeps type-graphql's resolver too.
 *
 * The resolver classes are stateless (their services come in the context): one instance of each
 * serves these fields, as type-graphql's default container keeps one.
 */
export function callFieldResolversDirectly(schema: GraphQLSchema, resolverClasses: readonly Class[]): GraphQLSchema {
  const storage = getMetadataStorage();
  const instances = new Map<Class, Record<string, Method>>();
  for (const resolver of storage.fieldResolvers) {
    if (resolver.kind !== 'external' || !resolverClasses.includes(resolver.target as Class)) continue;
    if (resolver.middlewares?.length || resolver.roles?.length) continue;
    const params = [...(resolver.params ?? [])].sort((a, b) => a.index - b.index);
    // The root and the context, whole, in either order, and nothing else.
    const kinds = params.map((p) => p.kind).join(',');
    if (kinds !== 'root' && kinds !== 'root,context' && kinds !== 'context,root') continue;
    if (params.some((p, i) => p.index !== i || ((p.kind === 'root' || p.kind === 'context') && p.propertyName !== undefined))) continue;
    const objectClass = resolver.getObjectType?.();
    const typeName = storage.objectTypes.find((o) => o.target === objectClass)?.name;
    const type = typeName ? schema.getType(typeName) : undefined;
    if (!isObjectType(type)) continue;
    const field = type.getFields()[resolver.schemaName];
    if (!field?.resolve || field.args.length) continue;
    const target = resolver.target as Class;
    let self = instances.get(target);
    if (!self) instances.set(target, (self = new (target as unknown as new () => Record<string, Method>)()));
    const method = self[resolver.methodName].bind(self);
    const call: (root: unknown, context: unknown) => unknown = kinds === 'context,root' ? (root, context) => method(context, root) : method;
    const wrapped: GraphQLFieldResolver<unknown, unknown> = field.resolve;
    const rootParam = params.find((p) => p.kind === 'root');
    const rootType = rootParam?.kind === 'root' ? (rootParam.getType?.() as Class | undefined) : undefined;
    const resolve: GraphQLFieldResolver<unknown, unknown> = rootType
      ? (root, args, context, info) => (root instanceof rootType ? call(root, context) : wrapped(root, args, context, info))
      : (root, _args, context) => call(root, context);
    direct.add(resolve);
    field.resolve = resolve;
  }
  return schema;
}
