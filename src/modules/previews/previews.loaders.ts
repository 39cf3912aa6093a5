import DataLoader from 'dataloader';
import { DataSource, In } from 'typeorm';
import { Preview, PreviewResource } from './preview.entity';

export function previewsLoaders(ds: DataSource) {
  return {
    /** `App.previews` of every egg of a list, newest first, in one statement. */
    previewsByAppId: new DataLoader<string, Preview[]>(async (appIds) => {
      const rows = await ds.getRepository(Preview).find({ where: { appId: In([...appIds]) }, order: { id: 'DESC' } });
      return appIds.map((id) => rows.filter((p) => p.appId === id));
    }),
    resourcesByPreviewId: new DataLoader<string, PreviewResource[]>(async (ids) => {
      const rows = await ds.getRepository(PreviewResource).find({ where: { previewId: In([...ids]) }, order: { kind: 'ASC' } });
      return ids.map((id) => rows.filter((r) => r.previewId === id));
    }),
  };
}
