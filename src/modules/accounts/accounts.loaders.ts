import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { User } from './user.entity';

export function accountsLoaders(ds: DataSource) {
  return {
    userById: new DataLoader<string, User | null>(async (ids) => {
      const rows = await ds.getRepository(User).findBy({ id: In([...ids]) });
      const byId = new Map(rows.map((u) => [u.id, u]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
  };
}
