import { Arg, Args, Ctx, FieldResolver, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { decodeCursor, pageSize } from '../../db/paging';
import { isId } from '../../ids';
import { User } from '../accounts/user.entity';
import { Deployment } from '../deployments/deployment.entity';
import { DeploymentsPageArgs } from '../deployments/deployments.inputs';
import { DeploymentConnection } from '../deployments/deployments.resolver';
import { App, effectiveMemoryMb, TIERS } from './app.entity';
import { CreateAppInput, UpdateResourcesInput } from './apps.inputs';

const AppConnection = Connection(App, 'App');

@Resolver(() => App)
export class AppsResolver {
  @Query(() => App, { description: 'An egg the caller owns or collaborates on.' })
  app(@Ctx() ctx: Context, @Arg('slug', () => String, { description: 'The egg’s slug.' }) slug: string): Promise<App> {
    return ctx.services.apps.getVisible(ctx.actor, slug);
  }

  @Query(() => AppConnection, { description: 'Eggs the caller owns or collaborates on, newest first.' })
  apps(@Ctx() ctx: Context, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.apps.list(ctx.actor, page);
  }

  @Mutation(() => App, { description: 'Creates an egg owned by the caller (an account owns at most 100 unless the operator set another cap).' })
  createApp(@Ctx() ctx: Context, @Arg('input', () => CreateAppInput, { description: 'The new egg.' }) input: CreateAppInput): Promise<App> {
    return ctx.services.apps.createApp(ctx.actor, input);
  }

  @Mutation(() => App, { description: 'Lets another account read and deploy the egg (owner only).' })
  async addCollaborator(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('email', () => String, { description: 'Email of an existing account.' }) email: string,
  ): Promise<App> {
    const egg = await ctx.services.apps.addCollaborator(ctx.actor, app, email);
    // Fields of the answer read the collaborators again, as they are now.
    ctx.loaders.collaboratorIdsByAppId.clear(egg.id);
    return egg;
  }

  @Mutation(() => App, { description: 'Takes a collaborator’s access away (owner only); their open streams on the egg end with NOT_FOUND.' })
  async removeCollaborator(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('email', () => String, { description: 'Email of the collaborator.' }) email: string,
  ): Promise<App> {
    const egg = await ctx.services.apps.removeCollaborator(ctx.actor, app, email);
    // Fields of the answer read the collaborators again, as they are now.
    ctx.loaders.collaboratorIdsByAppId.clear(egg.id);
    return egg;
  }

  @Mutation(() => App, {
    description:
      'Overrides the egg’s memory or replicas (owner only). Memory applies from the next deploy, restart or wake, replicas from the next deploy or restart; never to the running deployment.',
  })
  updateResources(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => UpdateResourcesInput, { description: 'The overrides.' }) input: UpdateResourcesInput,
  ): Promise<App> {
    return ctx.services.apps.updateResources(ctx.actor, app, input);
  }

  @FieldResolver(() => Int, { description: 'Memory in MB the egg gets from its next deploy, restart or wake.' })
  effectiveMemoryMb(@Root() app: App): number {
    return effectiveMemoryMb(app);
  }

  @FieldResolver(() => Int, { description: 'The most memory in MB the egg’s tier allows.' })
  capMb(@Root() app: App): number {
    return TIERS[app.tier].memoryCapMb;
  }

  @FieldResolver(() => Int, { description: 'Replicas the egg runs from its next deploy or restart.' })
  effectiveReplicas(@Root() app: App, @Ctx() ctx: Context): number {
    return ctx.services.apps.effectiveReplicas(app);
  }

  @FieldResolver(() => Int, { description: 'The most replicas the egg’s tier allows.' })
  replicasCap(@Root() app: App, @Ctx() ctx: Context): number {
    return ctx.services.apps.replicasCap(app.tier);
  }

  @FieldResolver(() => User, { description: 'The owner.' })
  async owner(@Root() app: App, @Ctx() ctx: Context): Promise<User> {
    return (await ctx.loaders.userById.load(app.ownerId))!;
  }

  @FieldResolver(() => [User], { description: 'Accounts that may read and deploy the egg besides the owner.' })
  async collaborators(@Root() app: App, @Ctx() ctx: Context): Promise<User[]> {
    const ids = await ctx.loaders.collaboratorIdsByAppId.load(app.id);
    const users = await ctx.loaders.userById.loadMany(ids);
    return users.filter((u): u is User => u !== null && !(u instanceof Error));
  }

  @FieldResolver(() => String, { description: 'The egg’s main address; it follows the newest live deployment.' })
  url(@Root() app: App, @Ctx() ctx: Context): string {
    return ctx.services.apps.mainUrl(app);
  }

  @FieldResolver(() => Deployment, { nullable: true, description: 'The deployment the main URL serves; null before the first one goes live.' })
  currentDeployment(@Root() app: App, @Ctx() ctx: Context): Promise<Deployment | null> | null {
    return app.currentDeploymentId ? ctx.loaders.deploymentById.load(app.currentDeploymentId) : null;
  }

  @FieldResolver(() => Deployment, { nullable: true, description: 'The newest deployment in any status.' })
  latestDeployment(@Root() app: App, @Ctx() ctx: Context): Promise<Deployment | null> {
    return ctx.loaders.latestDeploymentByAppId.load(app.id);
  }

  @FieldResolver(() => DeploymentConnection, { description: 'The egg’s deployments, newest first.' })
  deployments(@Root() app: App, @Ctx() ctx: Context, @Args(() => DeploymentsPageArgs) args: DeploymentsPageArgs) {
    // Batched across the eggs of a list; the same checks of `first` and `after` as every list.
    return ctx.loaders.deploymentPageByApp.load({
      appId: app.id,
      status: args.status ?? null,
      limit: pageSize(args.first),
      after: decodeCursor(args.after, (k) => isId(k, 'dep')),
    });
  }
}
