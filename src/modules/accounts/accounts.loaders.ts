import DataLoader from 'dataloader';
import { DataSource } from 'typeorm';
import { User } from './user.entity';
import { oneEach } from '../../graphql/batch';
import { entityRows } from '../../db/rows';
import { prepared } from '../../db/guarded-client';

export function accountsLoaders(ds: DataSource) {
  return {
    userById: new DataLoader<string, User | null>(async (ids) => {
      const rows = entityRows(ds, User, 'u');
      const found = await rows.query(ds, prepared(`SELECT ${rows.select} FROM users u WHERE u.id = ANY($1)`), [[...ids]]);
      return oneEach(ids, found, (u) => u.id);
    }),
  };
}
