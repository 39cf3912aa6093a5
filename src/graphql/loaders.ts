import { DataSource } from 'typeorm';
import { accountsLoaders } from '../modules/accounts/accounts.loaders';
import { appsLoaders } from '../modules/apps/apps.loaders';
import { deploymentsLoaders } from '../modules/deployments/deployments.loaders';
import { previewsLoaders } from '../modules/previews/previews.loaders';
import { cronsLoaders } from '../modules/crons/crons.loaders';
import { webhooksLoaders } from '../modules/webhooks/webhooks.loaders';
import { volumesLoaders } from '../modules/volumes/volumes.loaders';
import { drainsLoaders } from '../modules/drains/drains.loaders';

/** Fresh per operation, so a cache never outlives the request that filled it. */
export function createLoaders(ds: DataSource) {
  return {
    ...accountsLoaders(ds),
    ...appsLoaders(ds),
    ...deploymentsLoaders(ds),
    ...volumesLoaders(ds),
    ...previewsLoaders(ds),
    ...cronsLoaders(ds),
    ...webhooksLoaders(ds),
    ...drainsLoaders(ds),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
