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
    collaboratorIdsByAppId: new DataLoader<string, string[]>(async (appIds) => {
      const rows = await ds.getRepository(Collaborator).find({ where: { appId: In([...appIds]) }, order: { createdAt: 'ASC' } });
      return appIds.map((id) => rows.filter((r) => r.appId === id).map((r) => r.userId));
    }),
  };
}
