import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { App } from './app.entity';
import { Collaborator } from './collaborator.entity';
import { oneEach } from '../../graphql/batch';
import { entityRows } from '../../db/rows';
import { prepared } from '../../db/guarded-client';

export function appsLoaders(ds: DataSource) {
  return {
    appById: new DataLoader<string, App | null>(async (ids) => {
      const rows = entityRows(ds, App, 'a');
      const found = await rows.query(ds, prepared(`SELECT ${rows.select} FROM apps a WHERE a.id = ANY($1)`), [[...ids]]);
      return oneEach(ids, found, (a) => a.id);
    }),
    /**
     * The egg of each deployment a list read with it (same statement), for the deployment's `app`
     * and `canRollback`: read without a promise, where a primed loader hands out one a row. Keyed by
     * the operation's own rows, so never another operation's (or an event's) egg.
     */
    appOfDeployment: new WeakMap<object, App>(),
    collaboratorIdsByAppId: new DataLoader<string, string[]>(async (appIds) => {
      const rows = await ds.getRepository(Collaborator).find({ where: { appId: In([...appIds]) }, order: { createdAt: 'ASC' } });
      return appIds.map((id) => rows.filter((r) => r.appId === id).map((r) => r.userId));
    }),
  };
}
