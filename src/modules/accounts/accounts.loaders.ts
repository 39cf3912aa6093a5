import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { User } from './user.entity';
import { oneEach } from '../../graphql/batch';

export function accountsLoaders(ds: DataSource) {
  return {
    userById: new DataLoader<string, User | null>(async (ids) => {
      const rows = await ds.getRepository(User).findBy({ id: In([...ids]) });
      return oneEach(ids, rows, (u) => u.id);
    }),
  };
}
