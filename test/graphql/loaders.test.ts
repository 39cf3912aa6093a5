import DataLoader from 'dataloader';
import { DataSource } from 'typeorm';
import { createLoaders } from '../../src/graphql/loaders';

/**
 * An operation's loaders are made when first asked for, a module's at a time (an idle graphql-ws
 * subscriber held all twelve for as long as it ran), and are still fresh per operation: the same
 * loader for the whole operation, another for the next one.
 */
describe('createLoaders', () => {
  // Making a loader runs nothing: the data source is only used by a batch.
  const ds = { getRepository: () => undefined } as unknown as DataSource;
  const names = [
    'userById',
    'appById',
    'collaboratorIdsByAppId',
    'deploymentById',
    'latestDeploymentByAppId',
    'deploymentPageByApp',
    'volumeByAppId',
    'previewsByAppId',
    'resourcesByPreviewId',
    'lastRunByCronId',
    'lastDeliveryByWebhookId',
    'logDrainsByAppId',
  ];

  it('offers every loader, each a DataLoader', () => {
    const loaders = createLoaders(ds) as unknown as Record<string, unknown>;
    for (const name of names) expect(loaders[name]).toBeInstanceOf(DataLoader);
  });

  it('gives the same loader for the whole operation, and a new one to the next operation', () => {
    const a = createLoaders(ds);
    const b = createLoaders(ds);
    expect(a.appById).toBe(a.appById);
    expect(a.collaboratorIdsByAppId).toBe(a.collaboratorIdsByAppId);
    expect(b.appById).not.toBe(a.appById);
    expect(b.userById).not.toBe(a.userById);
    // The eggs a list read with its deployments, kept for the operation's fields only.
    expect(a.appOfDeployment).toBeInstanceOf(WeakMap);
    expect(a.appOfDeployment).toBe(a.appOfDeployment);
    expect(b.appOfDeployment).not.toBe(a.appOfDeployment);
  });

  it('makes no loader before one is asked for, then only that module’s', () => {
    const loaders = createLoaders(ds);
    // Nothing made yet: the operation's loaders hold no DataLoader of their own.
    expect(Object.values(Object.getOwnPropertyDescriptors(loaders)).some((d) => d.value instanceof DataLoader)).toBe(false);
    const app = loaders.appById;
    expect(app).toBeInstanceOf(DataLoader);
    const own = Object.getOwnPropertySymbols(loaders).map((s) => (loaders as unknown as Record<symbol, unknown>)[s]);
    const groups = own.find(Array.isArray) as Array<Record<string, unknown> | undefined>;
    expect(groups.filter(Boolean)).toHaveLength(1);
    expect(Object.keys(groups.find(Boolean)!).sort()).toEqual(['appById', 'appOfDeployment', 'collaboratorIdsByAppId']);
  });
});
