import { Args, Ctx, FieldResolver, Resolver, Root, Subscription, Extensions } from 'type-graphql';
import { EVENT_IS_RESULT } from '../../graphql/event-result';
import { Context } from '../../graphql/context';
import { oneByOne } from './log-stream';
import { App } from '../apps/app.entity';
import { APP_LOG_PAGE_MAX } from './app-logs';
import { AppLogStreamArgs, LogsArgs } from './deployments.inputs';
import { LogLineConnection, logPageComplexity } from './deployments.resolver';
import { LogLine } from './log-line.entity';

/** An egg's logs: the lines of all its deployments, read or followed in one place. */
@Resolver(() => App)
export class AppLogsResolver {
  @FieldResolver(() => LogLineConnection, {
    description:
      'The log lines of all the egg’s deployments, interleaved by time (then deployment and seq), oldest first; each says its `deploymentId`. The same arguments as `Deployment.logs`, pages of up to 500 lines (`first`, `tail`); `q` also takes `@deployment:<id>`.',
    complexity: logPageComplexity(APP_LOG_PAGE_MAX),
  })
  logs(@Root() app: App, @Ctx() ctx: Context, @Args(() => LogsArgs) args: LogsArgs) {
    return ctx.services.deployments.appLogs(app, args);
  }

  @Subscription(() => LogLine, {
    description:
      'The egg’s stored lines after `since` (all when omitted) in time order, then every new line of any of its deployments as it is stored: it follows the live deployment across redeploys (and a new build’s lines), with no line lost or repeated. Ends with NOT_FOUND when the subscriber can no longer see the egg.',
    subscribe: async ({ args, context }) => {
      const a = args as AppLogStreamArgs;
      const ctx = context as Context;
      return oneByOne(await ctx.services.deployments.watchAppLogBatches(ctx.actor, a.app, { since: a.since ?? null, q: a.q ?? null }));
    },
  })
  @Extensions(EVENT_IS_RESULT)
  appLogs(@Root() line: LogLine, @Args(() => AppLogStreamArgs) _args: AppLogStreamArgs): LogLine {
    return line;
  }
}
