import { Arg, Ctx, FieldResolver, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { App } from '../apps/app.entity';
import { Preview, PreviewResource } from './preview.entity';
import { UpsertPreviewInput } from './previews.inputs';
import { PreviewChange } from './previews.outputs';

@Resolver(() => Preview)
export class PreviewsResolver {
  @Query(() => [Preview], { description: 'The egg’s preview environments, newest first (at most 3).' })
  previews(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string): Promise<Preview[]> {
    return ctx.services.previews.list(ctx.actor, app);
  }

  @Mutation(() => PreviewChange, {
    description: 'Creates the preview of a pull request (at most 3 per egg), or redeploys an existing one and extends its expiry.',
  })
  upsertPreview(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => UpsertPreviewInput, { description: 'The pull request.' }) input: UpsertPreviewInput,
  ): Promise<PreviewChange> {
    return ctx.services.previews.upsert(ctx.actor, app, input);
  }

  @Mutation(() => Boolean, { description: 'Tears the preview down with its routes, database and addons.' })
  deletePreview(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('prNumber', () => Int, { description: 'Pull request number.' }) prNumber: number,
  ): Promise<boolean> {
    return ctx.services.previews.delete(ctx.actor, app, prNumber);
  }

  @FieldResolver(() => [PreviewResource], { description: 'The routes, database and addons the preview owns.' })
  resources(@Root() preview: Preview, @Ctx() ctx: Context): Promise<PreviewResource[]> {
    return ctx.loaders.resourcesByPreviewId.load(preview.id);
  }
}

@Resolver(() => App)
export class AppPreviewsResolver {
  @FieldResolver(() => [Preview], { description: 'The egg’s preview environments, newest first.' })
  previews(@Root() app: App, @Ctx() ctx: Context): Promise<Preview[]> {
    return ctx.loaders.previewsByAppId.load(app.id);
  }
}
