import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { Page, toPage } from '../../db/paging';
import { Deployment, DeploymentStatus } from './deployment.entity';
import { oneEach } from '../../graphql/batch';
import { entityRows } from '../../db/rows';

/** One egg's page of deployments, newest first: `limit` after the id `after`, in `status` if set. */
export interface DeploymentPageKey {
  appId: string;
  status: DeploymentStatus | null;
  limit: number;
  after: string | null;
}

export function deploymentsLoaders(ds: DataSource) {
  return {
    deploymentById: new DataLoader<string, Deployment | null>(async (ids) => {
      const rows = await ds.getRepository(Deployment).findBy({ id: In([...ids]) });
      return oneEach(ids, rows, (d) => d.id);
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
      return oneEach(appIds, rows, (d) => d.appId);
    }),
    /**
     * `App.deployments` of every egg of a list: per page shape (status, size, cursor), one
     * statement reads each egg's page (LATERAL … LIMIT).
     */
    deploymentPageByApp: new DataLoader<DeploymentPageKey, Page<Deployment>, string>(
      async (keys) => {
        const shapes = new Map<string, DeploymentPageKey[]>();
        for (const k of keys) {
          const shape = JSON.stringify([k.status, k.limit, k.after]);
          const group = shapes.get(shape);
          if (group) group.push(k);
          else shapes.set(shape, [k]);
        }
        const pages = new Map<DeploymentPageKey, Page<Deployment>>();
        const r = entityRows(ds, Deployment, 'd');
        for (const group of shapes.values()) {
          const { status, limit, after } = group[0];
          const appIds = [...new Set(group.map((k) => k.appId))];
          const rows = await r.query(
            ds,
            `SELECT ${r.select} FROM unnest($1::text[]) AS a(id)
               CROSS JOIN LATERAL (SELECT * FROM deployments
                                    WHERE app_id = a.id AND ($2::text IS NULL OR status::text = $2) AND ($3::text IS NULL OR id < $3)
                                    ORDER BY id DESC LIMIT $4) d
              ORDER BY d.id DESC`,
            [appIds, status, after, limit + 1],
          );
          for (const k of group)
            pages.set(
              k,
              toPage(
                rows.filter((d) => d.appId === k.appId),
                limit,
                (d) => d.id,
              ),
            );
        }
        return keys.map((k) => pages.get(k)!);
      },
      { cacheKeyFn: (k) => JSON.stringify([k.appId, k.status, k.limit, k.after]) },
    ),
  };
}
