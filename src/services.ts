import { DataSource } from 'typeorm';
import { Clock } from './clock';
import { GatewayPubSub } from './modules/topics';
import { AccountsService, TokenCacheOptions } from './modules/accounts/accounts.service';
import { AccessEvent } from './modules/accounts/access.topics';
import { AppsService } from './modules/apps/apps.service';
import { DeploymentsService } from './modules/deployments/deployments.service';
import { PreviewsService } from './modules/previews/previews.service';
import { Tier } from './modules/apps/app.entity';
import { BillingService } from './modules/billing/billing.service';
import { PaymentProvider } from './modules/billing/payment-provider';
import { Allowance, EnergyService } from './modules/energy/energy.service';
import { CronsService } from './modules/crons/crons.service';
import { WebhooksService } from './modules/webhooks/webhooks.service';
import { AddressGuard } from './modules/webhooks/address-guard';
import { WebhookSender } from './modules/webhooks/webhook-sender';
import { DrainsService } from './modules/drains/drains.service';
import Stripe from 'stripe';
import { VolumesService } from './modules/volumes/volumes.service';
import { SourcesService, SourcesOptions } from './modules/sources/sources.service';
import { Runtime } from './runtime/runtime.port';
import { SecretBox } from './secrets';
import type { Metrics } from './metrics';
import { newGatewayId } from './ids';

export interface Services {
  accounts: AccountsService;
  apps: AppsService;
  deployments: DeploymentsService;
  volumes: VolumesService;
  previews: PreviewsService;
  energy: EnergyService;
  billing: BillingService;
  crons: CronsService;
  webhooks: WebhooksService;
  sources: SourcesService;
  drains: DrainsService;
}

export interface ServiceDeps {
  ds: DataSource;
  clock: Clock;
  pubsub: GatewayPubSub;
  box: SecretBox;
  runtime: Runtime;
  appsDomain: string;
  previewTtlMs: number;
  allowances: Record<Tier, Allowance>;
  payments: { provider: PaymentProvider; stripe: Stripe; webhookSecret: string };
  baseUrl: () => string;
  crons: { missedAfterMs: number; runTimeoutMs: number };
  limits: { tokensPerAccount: number; eggsPerAccount: number; cronsPerEgg: number; replicas?: Record<Tier, number> };
  sources: SourcesOptions;
  webhooks: { allowHosts: string[]; timeoutMs: number; retryScheduleMs: number[]; disableAfter: number; ca?: Buffer; wake?: (delayMs?: number) => void };
  /** Log drains (their timeout, extra CA and address rules are the webhooks'); default: config's defaults. */
  logDrains?: { batchLines: number; pollMs: number; retryBaseMs: number; retryMaxMs: number; disableAfter: number };
  /** Log lines older than this many days are removed (0: kept); default 30. */
  logRetentionDays?: number;
  onError: (err: unknown) => void;
  metrics?: Metrics;
  /** How long a claim on a build or a running egg lasts unless renewed. */
  leaseMs?: number;
  /** This gateway's identity, shared by the event bus and the runner leases. */
  gatewayId?: string;
  /** Authenticated tokens kept for a moment; default: none kept. */
  tokenCache?: TokenCacheOptions;
}

export function createServices(deps: ServiceDeps): Services {
  const announce = (event: AccessEvent) => void deps.pubsub.publish('ACCESS', event);
  const accounts = new AccountsService(deps.ds, deps.clock, deps.limits, announce, deps.tokenCache);
  const apps = new AppsService(deps.ds, deps.clock, accounts, deps.appsDomain, deps.limits, announce);
  const volumes = new VolumesService(deps.ds, deps.clock, apps, deps.runtime);
  const guard = new AddressGuard(deps.webhooks.allowHosts);
  const webhooks = new WebhooksService(deps.ds, deps.clock, apps, deps.box, guard, new WebhookSender(guard, deps.webhooks), {
    ...deps.webhooks,
    leaseMarginMs: deps.leaseMs,
    onError: deps.onError,
    metrics: deps.metrics,
  });
  const sources = new SourcesService(deps.ds, deps.clock, apps, deps.sources);
  const drains = new DrainsService(deps.ds, deps.clock, apps, deps.box, guard, {
    batchLines: 1000,
    pollMs: 1000,
    retryBaseMs: 1000,
    retryMaxMs: 300_000,
    disableAfter: 30,
    ...deps.logDrains,
    timeoutMs: deps.webhooks.timeoutMs,
    ca: deps.webhooks.ca,
    leaseMs: deps.leaseMs ?? 30_000,
    gatewayId: deps.gatewayId ?? newGatewayId(),
    onError: deps.onError,
  });
  const deployments = new DeploymentsService({ ...deps, apps, volumes, webhooks, sources });
  const previews = new PreviewsService(deps.ds, deps.clock, apps, deps.runtime, sources, {
    appsDomain: deps.appsDomain,
    ttlMs: deps.previewTtlMs,
    leaseMs: deps.leaseMs,
    onError: deps.onError,
  });
  const energy = new EnergyService(deps.ds, deps.clock, deps.allowances);
  const billing = new BillingService({ ds: deps.ds, clock: deps.clock, energy, baseUrl: deps.baseUrl, ...deps.payments });
  const crons = new CronsService(deps.ds, deps.clock, apps, energy, deps.runtime, deployments, {
    ...deps.crons,
    maxPerEgg: deps.limits.cronsPerEgg,
    onError: deps.onError,
  });
  return { accounts, apps, deployments, volumes, previews, energy, billing, crons, webhooks, sources, drains };
}
