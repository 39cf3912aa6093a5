import Stripe from 'stripe';
import { DataSource } from 'typeorm';
import type { Actor } from '../../src/modules/accounts/actor';
import { createPubSub } from '../../src/bus/pubsub';
import { systemClock } from '../../src/clock';
import { loadConfig } from '../../src/config';
import { createDataSource } from '../../src/data-source';
import { Forbidden, NotFound } from '../../src/errors';
import { SandboxProvider } from '../../src/modules/billing/payment-provider';
import type { Topics } from '../../src/modules';
import { SimulatedRuntime } from '../../src/runtime/simulated.runtime';
import { SecretBox } from '../../src/secrets';
import { createServices, Services } from '../../src/services';
import { createTestDatabase, TestDatabase } from '../support/db';
import { unique } from '../support/factories';

/**
 * Services take an actor, not a transport's context: here they are called directly, with no
 * HTTP server, no GraphQL and no loaders, as a job or a CLI would.
 */
describe('services called with an actor, without any transport', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let services: Services;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource(db.url);
    await ds.initialize();
    const config = loadConfig({ HATCHERY_SIM_BUILD_MS: '50' });
    const baseUrl = () => 'http://127.0.0.1:0';
    services = createServices({
      ds,
      clock: systemClock,
      pubsub: createPubSub<Topics>(),
      box: new SecretBox(Buffer.alloc(32, 3)),
      runtime: new SimulatedRuntime(ds, { buildMs: 50, runtimeLogMs: 60_000, sleepAfterMs: 0, commandMs: 10 }),
      appsDomain: 'eggs.test',
      previewTtlMs: config.previewTtlMs,
      allowances: config.energy,
      payments: { provider: new SandboxProvider(baseUrl), stripe: new Stripe('sk_test_unused'), webhookSecret: 'whsec_test' },
      baseUrl,
      crons: { missedAfterMs: config.cronMissedAfterMs, runTimeoutMs: config.cronRunTimeoutMs },
      limits: config.limits,
      sources: config.sources,
      webhooks: config.webhooks,
      onError: (err) => {
        throw err;
      },
    });
  });
  afterAll(async () => {
    await services?.deployments.stop();
    await ds?.destroy();
    await db?.drop();
  });

  const actorFor = async (): Promise<Actor> => {
    const { user, token } = await services.accounts.createUser(`${unique('svc')}@example.com`);
    const auth = await services.accounts.authenticate(token);
    return { user, tokenId: auth!.tokenId };
  };

  it('an egg is the actor’s: its owner sees it, a stranger gets NotFound, a collaborator Forbidden where only the owner may', async () => {
    const owner = await actorFor();
    const collaborator = await actorFor();
    const stranger = await actorFor();
    const egg = await services.apps.createApp(owner, { slug: unique('egg') });
    expect(services.apps.mainUrl(egg)).toBe(`https://${egg.slug}.eggs.test`);
    expect((await services.apps.getVisible(owner, egg.slug)).id).toBe(egg.id);
    await expect(services.apps.getVisible(stranger, egg.slug)).rejects.toBeInstanceOf(NotFound);

    await services.apps.addCollaborator(owner, egg.slug, collaborator.user.email);
    expect((await services.apps.getVisible(collaborator, egg.slug)).id).toBe(egg.id);
    await expect(services.apps.addCollaborator(collaborator, egg.slug, stranger.user.email)).rejects.toBeInstanceOf(Forbidden);
    await expect(services.apps.updateResources(collaborator, egg.slug, { memoryMb: 128 })).rejects.toBeInstanceOf(Forbidden);
    await expect(services.apps.addCollaborator(stranger, egg.slug, stranger.user.email)).rejects.toBeInstanceOf(NotFound);
  });

  it('a deployment is made, listed and read as the actor, and hidden from another', async () => {
    const owner = await actorFor();
    const other = await actorFor();
    const egg = await services.apps.createApp(owner, { slug: unique('egg') });
    const d = await services.deployments.deploy(owner, { project: egg.slug, env: { GREETING: 'hi' } });
    expect(d.envKeys).toEqual(['GREETING']);
    expect((await services.deployments.list(owner, {})).nodes.map((n) => n.id)).toEqual([d.id]);
    expect((await services.deployments.list(other, {})).nodes).toEqual([]);
    await expect(services.deployments.get(other, d.id)).rejects.toBeInstanceOf(NotFound);
  });

  it('tokens are minted, listed and revoked as the actor; the revoked one no longer authenticates', async () => {
    const actor = await actorFor();
    const created = await services.accounts.createApiToken(actor, { name: 'ci' });
    expect((await services.accounts.listApiTokens(actor, {})).nodes.map((t) => t.id)).toContain(created.apiToken.id);
    expect(await services.accounts.authenticate(created.token)).not.toBeNull();
    await services.accounts.revokeApiToken(actor, created.apiToken.id);
    expect(await services.accounts.authenticate(created.token)).toBeNull();
    const stranger = await actorFor();
    await expect(services.accounts.revokeApiToken(stranger, created.apiToken.id)).rejects.toBeInstanceOf(NotFound);
  });
});
