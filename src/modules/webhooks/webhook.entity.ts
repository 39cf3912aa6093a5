import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { App } from '../apps/app.entity';

export const WEBHOOK_EVENTS = ['deploy'] as const;

export enum DeliveryStatus {
  PENDING = 'pending',
  SUCCEEDED = 'succeeded',
  FAILED = 'failed',
}
registerEnumType(DeliveryStatus, {
  name: 'DeliveryStatus',
  description: 'PENDING until a 2xx answer (SUCCEEDED) or until the retries run out or the target is gone (FAILED).',
});

@ObjectType({ simpleResolvers: true, description: 'A URL that receives signed events of an egg. Its signing secret is shown only at creation.' })
@Entity('webhooks')
export class Webhook {
  @Field(() => ID, { description: 'Webhook id, `wh_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => String, { description: 'The https URL deliveries go to.' })
  @Column('text')
  url: string;

  @Field(() => [String], { description: 'Subscribed events: `deploy`.' })
  @Column('text', { array: true })
  events: string[];

  @Field(() => Boolean, { description: 'False when disabled (by the owner, a 410 answer, or repeated failures).' })
  @Column('boolean')
  active: boolean;

  @Field(() => String, { nullable: true, description: 'Why the webhook was disabled automatically; null when active.' })
  @Column('text', { nullable: true })
  disabledReason: string | null;

  /** The Standard Webhooks secret (`whsec_…`), sealed with the gateway's key. */
  @Column('text')
  secretSealed: string;

  /** Events in a row whose delivery finally failed; reset by a success. */
  @Column('integer', { default: 0 })
  consecutiveFailures: number;

  @Field(() => Date, { description: 'When the webhook was registered.' })
  @Column('timestamptz')
  createdAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One event sent (or being sent) to a webhook, with its attempts.' })
@Entity('webhook_deliveries')
@Index(['webhookId', 'id'])
export class WebhookDelivery {
  @Field(() => ID, { description: 'Delivery id, `whd_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  webhookId: string;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE' })
  webhook?: Webhook;

  /** The Standard Webhooks message id (`webhook-id`): the same for a redelivery of the same event. */
  @Field(() => String, { description: 'The `webhook-id` header: the same on retries and redeliveries of one event.' })
  @Column('text')
  messageId: string;

  @Field(() => String, { description: 'Event type: `deploy` or `ping`.' })
  @Column('text')
  event: string;

  /** The exact body sent: `{type, timestamp, data}`. */
  @Column('text')
  payload: string;

  @Field(() => DeliveryStatus, { description: 'Where the delivery is.' })
  @Index()
  @Column('text')
  status: DeliveryStatus;

  @Field(() => Int, { description: 'Attempts made so far.' })
  @Column('integer', { default: 0 })
  attempts: number;

  @Field(() => Date, { nullable: true, description: 'When the next attempt is due; null once it is over.' })
  @Index()
  @Column('timestamptz', { nullable: true })
  nextAttemptAt: Date | null;

  /** A worker holding it until then is sending it. */
  @Column('timestamptz', { nullable: true })
  leaseUntil: Date | null;

  @Field(() => Int, { nullable: true, description: 'HTTP status of the last answer; null if none came.' })
  @Column('integer', { nullable: true })
  responseStatus: number | null;

  @Field(() => String, { nullable: true, description: 'Why the last attempt failed without an answer (timeout, refused target, …).' })
  @Column('text', { nullable: true })
  error: string | null;

  @Field(() => Int, { nullable: true, description: 'How long the last attempt took, in ms.' })
  @Column('integer', { nullable: true })
  durationMs: number | null;

  @Field(() => Date, { nullable: true, description: 'When the last attempt was made.' })
  @Column('timestamptz', { nullable: true })
  lastAttemptAt: Date | null;

  @Field(() => Date, { description: 'When the event happened.' })
  @Column('timestamptz')
  createdAt: Date;
}
