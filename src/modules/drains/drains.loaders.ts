import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { LogDrain } from './log-drain.entity';

export function drainsLoaders(ds: DataSource) {
  return {
    /** `App.logDrains` of every egg of a list, newest first, in one statement. */
    logDrainsByAppId: new DataLoader<string, LogDrain[]>(async (appIds) => {
      const rows = await ds.getRepository(LogDrain).find({ where: { appId: In([...appIds]) }, order: { id: 'DESC' } });
      return appIds.map((id) => rows.filter((d) => d.appId === id));
    }),
  };
}
