import { AccountsResolver } from './accounts/accounts.resolver';
import { AppsResolver } from './apps/apps.resolver';
import { DeploymentsResolver } from './deployments/deployments.resolver';
import { AppLogsResolver } from './deployments/app-logs.resolver';
import { AppPreviewsResolver, PreviewsResolver } from './previews/previews.resolver';
import { BillingResolver } from './billing/billing.resolver';
import { EnergyResolver } from './energy/energy.resolver';
import { CronsResolver } from './crons/crons.resolver';
import { WebhooksResolver } from './webhooks/webhooks.resolver';
import { AppVolumeResolver, VolumesResolver } from './volumes/volumes.resolver';
import { SourcesResolver } from './sources/sources.resolver';
import { AppDrainsResolver, DrainsResolver } from './drains/drains.resolver';

/** The topic registry: every module's events and how they travel between gateways. */
export { topicCodecs, type GatewayPubSub, type Topics } from './topics';

/** The one list of resolvers: the schema, the emitted SDL and the tests all build from it. */
export const resolvers = [
  AccountsResolver,
  AppsResolver,
  DeploymentsResolver,
  AppLogsResolver,
  SourcesResolver,
  VolumesResolver,
  AppVolumeResolver,
  PreviewsResolver,
  AppPreviewsResolver,
  EnergyResolver,
  BillingResolver,
  CronsResolver,
  WebhooksResolver,
  DrainsResolver,
  AppDrainsResolver,
] as const;

/** The one list of entities, for the DataSource and the migration drift check. */
export { entities } from './entities';
