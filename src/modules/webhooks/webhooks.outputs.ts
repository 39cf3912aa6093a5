import { Field, Int, ObjectType } from 'type-graphql';
import { DeliveryStatus, Webhook } from './webhook.entity';

@ObjectType({ simpleResolvers: true, description: 'A new webhook with its signing secret, shown only here.' })
export class CreatedWebhook {
  @Field(() => Webhook, { description: 'The webhook.' })
  webhook: Webhook;

  @Field(() => String, { description: 'The Standard Webhooks signing secret, `whsec_…`. Store it now: it is never shown again.' })
  secret: string;
}

@ObjectType({ simpleResolvers: true, description: 'The answer to a test ping.' })
export class WebhookTestResult {
  @Field(() => String, { description: 'The ping’s delivery id.' })
  deliveryId: string;

  @Field(() => DeliveryStatus, { description: 'SUCCEEDED for a 2xx answer, else FAILED.' })
  status: DeliveryStatus;

  @Field(() => Int, { nullable: true, description: 'HTTP status of the answer; null when none came.' })
  responseStatus: number | null;

  @Field(() => Int, { description: 'How long it took, in ms.' })
  durationMs: number;
}
