import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { App } from '../apps/app.entity';
import { LogDrain } from './log-drain.entity';
import { CreateLogDrainInput } from './drains.inputs';
import { CreatedLogDrain } from './drains.outputs';

@Resolver(() => LogDrain)
export class DrainsResolver {
  @Query(() => [LogDrain], { description: 'The egg’s log drains, newest first (at most 3). Secrets are never listed.' })
  logDrains(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string): Promise<LogDrain[]> {
    return ctx.services.drains.list(ctx.actor, app);
  }

  @Mutation(() => CreatedLogDrain, {
    description: 'Creates a log drain (at most 3 per egg): it ships the lines written from now on. The answer carries its signing secret, once.',
  })
  createLogDrain(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => CreateLogDrainInput, { description: 'URL and format.' }) input: CreateLogDrainInput,
  ): Promise<CreatedLogDrain> {
    return ctx.services.drains.create(ctx.actor, app, input);
  }

  @Mutation(() => ID, { description: 'Deletes a log drain; nothing more is sent to it. Returns its id.' })
  deleteLogDrain(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Log drain id.' }) id: string,
  ): Promise<string> {
    return ctx.services.drains.delete(ctx.actor, app, id);
  }
}

@Resolver(() => App)
export class AppDrainsResolver {
  @FieldResolver(() => [LogDrain], { description: 'The egg’s log drains, newest first.' })
  logDrains(@Root() app: App, @Ctx() ctx: Context): Promise<LogDrain[]> {
    return ctx.loaders.logDrainsByAppId.load(app.id);
  }
}
