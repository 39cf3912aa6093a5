import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root, Subscription, Extensions } from 'type-graphql';
import { EVENT_IS_RESULT } from '../../graphql/event-result';
import { Context } from '../../graphql/context';
import { Connection } from '../../graphql/pagination';
import { pageComplexity } from '../../graphql/limits';
import { App } from '../apps/app.entity';
import { Deployment, DeploymentStatus } from './deployment.entity';
import { DeployInput, DeploymentsArgs, LogsArgs, LogStreamArgs } from './deployments.inputs';
import { LOG_PAGE_DEFAULT, LOG_PAGE_MAX } from './deployments.service';
import { LogLine } from './log-line.entity';

export const DeploymentConnection = Connection(Deployment, 'Deployment');
export const LogLineConnection = Connection(LogLine, 'LogLine');

/** The cost of a page of log lines: `first` lines, or `tail` lines, at most `max`. */
export const logPageComplexity =
  (max: number) =>
  ({ args, childComplexity }: { args: Record<string, unknown>; childComplexity: number }) =>
    pageComplexity(
      LOG_PAGE_DEFAULT,
      max,
    )({ args: { first: Math.max(Number(args.first ?? 0) || 0, Number(args.tail ?? 0) || 0) || undefined }, childComplexity });

interface StatusArgs {
  id: string;
}

/** A deployment's egg: a list's rows have theirs already (no promise a row), any other deployment's comes from the loader. */
function eggOf(d: Deployment, ctx: Context): App | null | Promise<App | null> {
  return ctx.loaders.appOfDeployment.get(d) ?? ctx.loaders.appById.load(d.appId);
}

@Resolver(() => Deployment)
export class DeploymentsResolver {
  @Query(() => Deployment, { description: 'A deployment of an egg the caller can see.' })
  deployment(@Ctx() ctx: Context, @Arg('id', () => ID, { description: 'Deployment id.' }) id: string): Promise<Deployment> {
    return ctx.services.deployments.get(ctx.actor, id);
  }

  @Query(() => DeploymentConnection, { description: 'Deployments of the eggs the caller can see, newest first.' })
  deployments(@Ctx() ctx: Context, @Args(() => DeploymentsArgs) args: DeploymentsArgs) {
    // Their eggs come in the same statement: `app` and `canRollback` then need no other.
    const eggs = ctx.loaders.appOfDeployment;
    return ctx.services.deployments.list(ctx.actor, args, (app, d) => eggs.set(d, app));
  }

  @Mutation(() => Deployment, { description: 'Starts a deployment; it is BUILDING, then LIVE or FAILED.' })
  deploy(
    @Ctx() ctx: Context,
    @Arg('input', () => DeployInput, { description: 'What to deploy.' }) input: DeployInput,
    @Arg('idempotencyKey', () => String, {
      nullable: true,
      description: 'Retrying with the same key and input returns the first result instead of deploying twice (24 hours, per account).',
    })
    idempotencyKey?: string | null,
  ): Promise<Deployment> {
    return ctx.services.deployments.deploy(ctx.actor, input, idempotencyKey);
  }

  @Mutation(() => ID, { description: 'Deletes a deployment and its logs; returns its id.' })
  deleteDeployment(@Ctx() ctx: Context, @Arg('id', () => ID, { description: 'Deployment id.' }) id: string): Promise<string> {
    return ctx.services.deployments.delete(ctx.actor, id);
  }

  @Mutation(() => Deployment, { description: 'Builds a new deployment with the same env as `id`, and the egg’s current memory.' })
  redeploy(@Ctx() ctx: Context, @Arg('id', () => ID, { description: 'The deployment to build again.' }) id: string): Promise<Deployment> {
    return ctx.services.deployments.redeploy(ctx.actor, id);
  }

  @Mutation(() => App, { description: 'Makes an earlier live deployment the egg’s current one again, without a rebuild; the main URL follows.' })
  async rollback(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('to', () => ID, { description: 'A live deployment of the egg.' }) to: string,
  ): Promise<App> {
    const egg = await ctx.services.deployments.rollback(ctx.actor, app, to);
    // Fields of the answer read the egg again, with its new current deployment.
    ctx.loaders.appById.clear(egg.id);
    return egg;
  }

  @Mutation(() => App, { description: 'Restarts the egg’s current deployment; it picks up the egg’s effective memory.' })
  restartApp(@Ctx() ctx: Context, @Arg('slug', () => String, { description: 'The egg’s slug.' }) slug: string): Promise<App> {
    return ctx.services.deployments.restartApp(ctx.actor, slug);
  }

  @FieldResolver(() => Boolean, { description: 'Whether `rollback` can make this deployment current: it is LIVE and not current.' })
  canRollback(@Root() d: Deployment, @Ctx() ctx: Context): boolean | Promise<boolean> {
    if (d.status !== DeploymentStatus.LIVE) return false;
    const rollsBack = (app: App | null) => app !== null && app.currentDeploymentId !== d.id;
    const egg = eggOf(d, ctx);
    return egg instanceof Promise ? egg.then(rollsBack) : rollsBack(egg);
  }

  @FieldResolver(() => ID, {
    nullable: true,
    description: 'The uploaded source (`src_…`) it builds; null when it runs an `image`, or the egg had no source when it was deployed.',
  })
  source(@Root() d: Deployment): string | null {
    return d.sourceId;
  }

  @FieldResolver(() => App, { description: 'The egg deployed.' })
  app(@Root() d: Deployment, @Ctx() ctx: Context): App | Promise<App> {
    return eggOf(d, ctx) as App | Promise<App>;
  }

  @FieldResolver(() => LogLineConnection, {
    description: 'Build and runtime log lines, oldest first.',
    complexity: logPageComplexity(LOG_PAGE_MAX),
  })
  logs(@Root() d: Deployment, @Ctx() ctx: Context, @Args(() => LogsArgs) args: LogsArgs) {
    return ctx.services.deployments.logs(ctx.actor, d, args);
  }

  @Subscription(() => Deployment, {
    description: 'The deployment’s current state at once, then every change; completes when it is deleted.',
    subscribe: ({ args, context }) => (context as Context).services.deployments.watchStatus((context as Context).actor, (args as StatusArgs).id),
  })
  @Extensions(EVENT_IS_RESULT)
  deploymentStatus(@Root() d: Deployment, @Arg('id', () => ID, { description: 'Deployment id.' }) _id: string): Deployment {
    return d;
  }

  @Subscription(() => [LogLine], {
    description:
      'The stream of `deploymentLogs`, several lines per message: the lines stored together (up to 500 at a time), for following busy logs. Same arguments, order and guarantees.',
    subscribe: ({ args, context }) => {
      const a = args as LogStreamArgs;
      return (context as Context).services.deployments.watchLogBatches((context as Context).actor, a.id, a.type ?? null, a.since ?? null, a.q ?? null);
    },
  })
  @Extensions(EVENT_IS_RESULT)
  deploymentLogBatches(@Root() lines: LogLine[], @Args(() => LogStreamArgs) _args: LogStreamArgs): LogLine[] {
    return lines;
  }

  @Subscription(() => LogLine, {
    description:
      'Stored lines after `since` (all when omitted), then live lines, with none lost or repeated. A BUILD stream completes when the build ends; every stream completes when the deployment is deleted.',
    subscribe: ({ args, context }) => {
      const a = args as LogStreamArgs;
      return (context as Context).services.deployments.watchLogs((context as Context).actor, a.id, a.type ?? null, a.since ?? null, a.q ?? null);
    },
  })
  @Extensions(EVENT_IS_RESULT)
  deploymentLogs(@Root() line: LogLine, @Args(() => LogStreamArgs) _args: LogStreamArgs): LogLine {
    return line;
  }
}
