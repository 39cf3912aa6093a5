import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { Deployment } from './deployment.entity';

export function deploymentsLoaders(ds: DataSource) {
  return {
    deploymentById: new DataLoader<string, Deployment | null>(async (ids) => {
      const rows = await ds.getRepository(Deployment).findBy({ id: In([...ids]) });
      const byId = new Map(rows.map((d) => [d.id, d]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
    latestDeploymentByAppId: new DataLoader<string, Deployment | null>(async (appIds) => {
      const rows = await ds
        .getRepository(Deployment)
        .createQueryBuilder('d')
        .distinctOn(['d.app_id'])
        .where('d.app_id IN (:...appIds)', { appIds: [...appIds] })
        .orderBy('d.app_id')
        .addOrderBy('d.id', 'DESC')
        .getMany();
      const byApp = new Map(rows.map((d) => [d.appId, d]));
      return appIds.map((id) => byApp.get(id) ?? null);
    }),
  };
}
