import DataLoader from 'dataloader';
import { DataSource } from 'typeorm';
import { WebhookDelivery } from './webhook.entity';
import { oneEach } from '../../graphql/batch';

export function webhooksLoaders(ds: DataSource) {
  return {
    /** The latest delivery that has been attempted. */
    lastDeliveryByWebhookId: new DataLoader<string, WebhookDelivery | null>(async (ids) => {
      const rows = await ds
        .getRepository(WebhookDelivery)
        .createQueryBuilder('d')
        .distinctOn(['d.webhook_id'])
        .where('d.webhook_id IN (:...ids) AND d.last_attempt_at IS NOT NULL', { ids: [...ids] })
        .orderBy('d.webhook_id')
        .addOrderBy('d.last_attempt_at', 'DESC')
        .getMany();
      return oneEach(ids, rows, (d) => d.webhookId);
    }),
  };
}
