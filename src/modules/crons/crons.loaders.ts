import DataLoader from 'dataloader';
import { DataSource } from 'typeorm';
import { CronRun } from './cron.entity';
import { oneEach } from '../../graphql/batch';

export function cronsLoaders(ds: DataSource) {
  return {
    lastRunByCronId: new DataLoader<string, CronRun | null>(async (ids) => {
      const rows = await ds
        .getRepository(CronRun)
        .createQueryBuilder('r')
        .distinctOn(['r.cron_id'])
        .where('r.cron_id IN (:...ids)', { ids: [...ids] })
        .orderBy('r.cron_id')
        .addOrderBy('r.id', 'DESC')
        .getMany();
      return oneEach(ids, rows, (r) => r.cronId);
    }),
  };
}
