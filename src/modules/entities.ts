import { ApiToken } from './accounts/api-token.entity';
import { User } from './accounts/user.entity';
import { App } from './apps/app.entity';
import { Collaborator } from './apps/collaborator.entity';
import { Deployment } from './deployments/deployment.entity';
import { IdempotencyKey } from './deployments/idempotency-key.entity';
import { LogLine } from './deployments/log-line.entity';
import { Preview, PreviewResource } from './previews/preview.entity';
import { Volume } from './volumes/volume.entity';
import { CheckoutSession, PackFulfilment } from './billing/billing.entity';
import { EnergyAccount, EnergyLedgerEntry } from './energy/energy.entity';
import { Cron, CronRun } from './crons/cron.entity';
import { Webhook, WebhookDelivery } from './webhooks/webhook.entity';
import { SimVolumeUsage } from '../runtime/sim-volume-usage.entity';
import { EventPayload } from '../bus/event-payload.entity';
import { Source, SourceChunk } from './sources/source.entity';
import { LogDrain, LogDrainCursor } from './drains/log-drain.entity';

/** The one list of entities, for the DataSource and the migration drift check. */
export const entities = [
  User,
  ApiToken,
  App,
  Collaborator,
  Deployment,
  LogLine,
  IdempotencyKey,
  Volume,
  SimVolumeUsage,
  Preview,
  PreviewResource,
  EnergyAccount,
  EnergyLedgerEntry,
  CheckoutSession,
  PackFulfilment,
  Cron,
  CronRun,
  Webhook,
  WebhookDelivery,
  EventPayload,
  Source,
  SourceChunk,
  LogDrain,
  LogDrainCursor,
];
