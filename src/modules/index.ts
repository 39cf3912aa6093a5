import { AccountsResolver } from './accounts/accounts.resolver';
import { ApiToken } from './accounts/api-token.entity';
import { User } from './accounts/user.entity';
import { App } from './apps/app.entity';
import { AppsResolver } from './apps/apps.resolver';
import { Collaborator } from './apps/collaborator.entity';
import { Deployment } from './deployments/deployment.entity';
import { DeploymentsResolver } from './deployments/deployments.resolver';
import { IdempotencyKey } from './deployments/idempotency-key.entity';
import { LogLine } from './deployments/log-line.entity';
import { Preview, PreviewResource } from './previews/preview.entity';
import { AppPreviewsResolver, PreviewsResolver } from './previews/previews.resolver';
import { Volume } from './volumes/volume.entity';
import { CheckoutSession, PackFulfilment } from './billing/billing.entity';
import { BillingResolver } from './billing/billing.resolver';
import { EnergyAccount, EnergyLedgerEntry } from './energy/energy.entity';
import { EnergyResolver } from './energy/energy.resolver';
import { Cron, CronRun } from './crons/cron.entity';
import { CronsResolver } from './crons/crons.resolver';
import { Webhook, WebhookDelivery } from './webhooks/webhook.entity';
import { WebhooksResolver } from './webhooks/webhooks.resolver';
import { AppVolumeResolver, VolumesResolver } from './volumes/volumes.resolver';
import { SimVolumeUsage } from '../runtime/sim-volume-usage.entity';
import { EventPayload } from '../bus/event-payload.entity';

/** The topic registry: every module's events and how they travel between gateways. */
export { topicCodecs, type GatewayPubSub, type Topics } from './topics';

/** The one list of resolvers: the schema, the emitted SDL and the tests all build from it. */
export const resolvers = [AccountsResolver, AppsResolver, DeploymentsResolver, VolumesResolver, AppVolumeResolver, PreviewsResolver, AppPreviewsResolver, EnergyResolver, BillingResolver, CronsResolver, WebhooksResolver] as const;

/** The one list of entities, for the DataSource and the migration drift check. */
export const entities = [User, ApiToken, App, Collaborator, Deployment, LogLine, IdempotencyKey, Volume, SimVolumeUsage, Preview, PreviewResource, EnergyAccount, EnergyLedgerEntry, CheckoutSession, PackFulfilment, Cron, CronRun, Webhook, WebhookDelivery, EventPayload];
