import 'reflect-metadata';
import { GraphQLObjectType, GraphQLResolveInfo } from 'graphql';
import { buildGatewaySchema } from '../../src/graphql/schema';
import { isCalledDirectly } from '../../src/graphql/direct-fields';
import { App, Tier } from '../../src/modules/apps/app.entity';
import { Deployment, DeploymentStatus } from '../../src/modules/deployments/deployment.entity';

/**
 * Field resolvers that take only their root and the context are called without type-graphql's
 * wrapper (src/graphql/direct-fields.ts), and answer as they did through it: with the root as it
 * is when it is of the field's type, and converted by type-graphql when it is not.
 */
describe('field resolvers called directly', () => {
  const schema = buildGatewaySchema();
  const fields = (type: string) => (schema.getType(type) as GraphQLObjectType).getFields();
  const info = {} as GraphQLResolveInfo;

  it('are the ones that take their root and the context only; a field with arguments keeps type-graphql’s resolver', () => {
    for (const name of ['app', 'source', 'canRollback']) expect(isCalledDirectly(fields('Deployment')[name].resolve)).toBe(true);
    for (const name of ['effectiveMemoryMb', 'capMb', 'owner', 'currentDeployment']) expect(isCalledDirectly(fields('App')[name].resolve)).toBe(true);
    // `logs` takes arguments; plain fields have no resolver at all (simpleResolvers).
    expect(fields('Deployment').logs.resolve).toBeDefined();
    expect(isCalledDirectly(fields('Deployment').logs.resolve)).toBe(false);
    expect(fields('Deployment').status.resolve).toBeUndefined();
  });

  it('answer with the root as it is, and a plain object converted to the field’s type first, as type-graphql does', () => {
    const egg = Object.assign(new App(), { id: 'app_1', slug: 'egg', tier: Tier.FREE, memoryMb: null, currentDeploymentId: 'dep_2' });
    const seen: unknown[] = [];
    const appOfDeployment = new WeakMap<object, App>();
    const ctx = {
      loaders: {
        appOfDeployment: {
          get: (d: object) => {
            seen.push(d);
            return appOfDeployment.get(d);
          },
        },
      },
    };
    const d = Object.assign(new Deployment(), { id: 'dep_1', appId: 'app_1', status: DeploymentStatus.LIVE, sourceId: 'src_1' });
    appOfDeployment.set(d, egg);
    const { app, canRollback, source } = fields('Deployment');
    expect(app.resolve!(d, {}, ctx, info)).toBe(egg);
    expect(canRollback.resolve!(d, {}, ctx, info)).toBe(true);
    expect(source.resolve!(d, {}, ctx, info)).toBe('src_1');
    expect(seen).toEqual([d, d]);
    // A plain object (not a Deployment): type-graphql's resolver converts it, as before.
    expect(source.resolve!({ id: 'dep_3', sourceId: 'src_3' }, {}, ctx, info)).toBe('src_3');
    expect(fields('App').capMb.resolve!({ tier: Tier.FREE }, {}, ctx, info)).toBe(fields('App').capMb.resolve!(egg, {}, ctx, info));
  });
});
