import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { Volume } from './volume.entity';
import { oneEach } from '../../graphql/batch';

export function volumesLoaders(ds: DataSource) {
  return {
    volumeByAppId: new DataLoader<string, Volume | null>(async (appIds) => {
      const rows = await ds.getRepository(Volume).findBy({ appId: In([...appIds]) });
      return oneEach(appIds, rows, (v) => v.appId);
    }),
  };
}
