import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { PreviewResource } from './preview.entity';

export function previewsLoaders(ds: DataSource) {
  return {
    resourcesByPreviewId: new DataLoader<string, PreviewResource[]>(async (ids) => {
      const rows = await ds.getRepository(PreviewResource).find({ where: { previewId: In([...ids]) }, order: { kind: 'ASC' } });
      return ids.map((id) => rows.filter((r) => r.previewId === id));
    }),
  };
}
