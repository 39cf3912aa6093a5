import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { Webhook, WebhookDelivery } from './webhook.entity';
import { CreateWebhookInput } from './webhooks.inputs';
import { CreatedWebhook, WebhookTestResult } from './webhooks.outputs';

const WebhookDeliveryConnection = Connection(WebhookDelivery, 'WebhookDelivery');

@Resolver(() => Webhook)
export class WebhooksResolver {
  @Query(() => [Webhook], { description: 'The egg’s webhooks, newest first (at most 3). Secrets are never listed.' })
  webhooks(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string): Promise<Webhook[]> {
    return ctx.services.webhooks.list(ctx.actor, app);
  }

  @Mutation(() => CreatedWebhook, { description: 'Registers a webhook (at most 3 per egg); the answer carries its signing secret, once.' })
  createWebhook(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => CreateWebhookInput, { description: 'URL and events.' }) input: CreateWebhookInput,
  ): Promise<CreatedWebhook> {
    return ctx.services.webhooks.create(ctx.actor, app, input);
  }

  @Mutation(() => ID, { description: 'Deletes a webhook and its delivery history; returns its id.' })
  deleteWebhook(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Webhook id.' }) id: string,
  ): Promise<string> {
    return ctx.services.webhooks.delete(ctx.actor, app, id);
  }

  @Mutation(() => Webhook, { description: 'Disables (false) or re-enables (true) a webhook.' })
  setWebhookActive(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Webhook id.' }) id: string,
    @Arg('active', () => Boolean, { description: 'Whether it receives events.' }) active: boolean,
  ): Promise<Webhook> {
    return ctx.services.webhooks.setActive(ctx.actor, app, id, active);
  }

  @Mutation(() => WebhookTestResult, { description: 'Sends a signed `ping` now and reports the answer.' })
  testWebhook(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Webhook id.' }) id: string,
  ): Promise<WebhookTestResult> {
    return ctx.services.webhooks.test(ctx.actor, app, id);
  }

  @Mutation(() => WebhookDelivery, { description: 'Sends a past delivery’s event again (same `webhook-id`), as a new delivery.' })
  redeliverWebhookDelivery(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Delivery id.' }) id: string,
  ): Promise<WebhookDelivery> {
    return ctx.services.webhooks.redeliver(ctx.actor, app, id);
  }

  @FieldResolver(() => WebhookDeliveryConnection, { description: 'Delivery history, newest first.' })
  deliveries(@Root() webhook: Webhook, @Ctx() ctx: Context, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.webhooks.deliveries(webhook.id, page);
  }

  @FieldResolver(() => WebhookDelivery, { nullable: true, description: 'The delivery attempted most recently; null before the first.' })
  lastDelivery(@Root() webhook: Webhook, @Ctx() ctx: Context): Promise<WebhookDelivery | null> {
    return ctx.loaders.lastDeliveryByWebhookId.load(webhook.id);
  }
}
