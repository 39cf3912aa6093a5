import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { Volume } from './volume.entity';

export function volumesLoaders(ds: DataSource) {
  return {
    volumeByAppId: new DataLoader<string, Volume | null>(async (appIds) => {
      const rows = await ds.getRepository(Volume).findBy({ appId: In([...appIds]) });
      const byApp = new Map(rows.map((v) => [v.appId, v]));
      return appIds.map((id) => byApp.get(id) ?? null);
    }),
  };
}
