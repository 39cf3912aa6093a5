import { DataSource } from 'typeorm';
import { accountsLoaders } from '../modules/accounts/accounts.loaders';
import { appsLoaders } from '../modules/apps/apps.loaders';
import { deploymentsLoaders } from '../modules/deployments/deployments.loaders';
import { previewsLoaders } from '../modules/previews/previews.loaders';
import { cronsLoaders } from '../modules/crons/crons.loaders';
import { webhooksLoaders } from '../modules/webhooks/webhooks.loaders';
import { volumesLoaders } from '../modules/volumes/volumes.loaders';
import { drainsLoaders } from '../modules/drains/drains.loaders';

/** Each module's loaders, made together (they may share what they make). */
const GROUPS: ReadonlyArray<(ds: DataSource) => Record<string, unknown>> = [
  accountsLoaders,
  appsLoaders,
  deploymentsLoaders,
  volumesLoaders,
  previewsLoaders,
  cronsLoaders,
  webhooksLoaders,
  drainsLoaders,
];

/** Every module's loaders. */
export type Loaders = ReturnType<typeof accountsLoaders> &
  ReturnType<typeof appsLoaders> &
  ReturnType<typeof deploymentsLoaders> &
  ReturnType<typeof volumesLoaders> &
  ReturnType<typeof previewsLoaders> &
  ReturnType<typeof cronsLoaders> &
  ReturnType<typeof webhooksLoaders> &
  ReturnType<typeof drainsLoaders>;

const DS = Symbol('ds');
const MADE = Symbol('made');

interface LazyLoaders {
  [DS]: DataSource;
  /** Per group (by its index in GROUPS), its loaders once one of them was asked for. */
  [MADE]: Array<Record<string, unknown> | undefined>;
}

/** The getters every operation's loaders share: learnt from the groups once, on the first call. */
let getters: object | null = null;

function loaderGetters(ds: DataSource): object {
  if (getters) return getters;
  const proto: Record<string, unknown> = {};
  GROUPS.forEach((group, i) => {
    for (const name of Object.keys(group(ds))) {
      Object.defineProperty(proto, name, {
        enumerable: true,
        get(this: LazyLoaders) {
          return (this[MADE][i] ??= group(this[DS]))[name];
        },
      });
    }
  });
  return (getters = proto);
}

/**
 * Fresh per operation, so a cache never outlives the request that filled it. A module's loaders
 * are made when one of them is first asked for: most operations use one module's or none, and a
 * graphql-ws connection holds a context per subscription for as long as it runs (all 12 loaders
 * made for each were a third of an idle subscriber's memory).
 */
export function createLoaders(ds: DataSource): Loaders {
  const loaders = Object.create(loaderGetters(ds)) as LazyLoaders;
  loaders[DS] = ds;
  loaders[MADE] = [];
  return loaders as unknown as Loaders;
}
