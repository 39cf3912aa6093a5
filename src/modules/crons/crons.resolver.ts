import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { Cron, CronRun } from './cron.entity';
import { CreateCronInput } from './crons.inputs';

const CronConnection = Connection(Cron, 'Cron');
const CronRunConnection = Connection(CronRun, 'CronRun');

@Resolver(() => Cron)
export class CronsResolver {
  @Query(() => CronConnection, { description: 'The egg’s crons, newest first.' })
  crons(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.crons.list(ctx.actor, app, page);
  }

  @Query(() => Cron, { description: 'One cron of the egg.' })
  cron(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
  ): Promise<Cron> {
    return ctx.services.crons.get(ctx.actor, app, id);
  }

  @Query(() => CronRunConnection, { description: 'Runs of a cron, most recent first.' })
  cronRuns(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
    @Args(() => PageArgs) page: PageArgs,
  ) {
    return ctx.services.crons.runs(ctx.actor, app, id, page);
  }

  @Mutation(() => Cron, {
    description: 'Schedules a command (at most 20 crons per egg unless the operator set another cap); the first run is at the next due time after now.',
  })
  createCron(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => CreateCronInput, { description: 'Schedule and command.' }) input: CreateCronInput,
  ): Promise<Cron> {
    return ctx.services.crons.create(ctx.actor, app, input);
  }

  @Mutation(() => ID, { description: 'Deletes the cron and its runs; no further runs happen. Returns its id.' })
  deleteCron(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
  ): Promise<string> {
    return ctx.services.crons.delete(ctx.actor, app, id);
  }

  @Mutation(() => Cron, { description: 'Pauses (false) or resumes (true) the cron; resuming schedules the next due time after now.' })
  setCronEnabled(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
    @Arg('enabled', () => Boolean, { description: 'Whether it runs on its schedule.' }) enabled: boolean,
  ): Promise<Cron> {
    return ctx.services.crons.setEnabled(ctx.actor, app, id, enabled);
  }

  @Mutation(() => CronRun, { description: 'Runs the command now, outside the schedule; refused while a run is in progress.' })
  runCronNow(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
  ): Promise<CronRun> {
    return ctx.services.crons.runNow(ctx.actor, app, id);
  }

  @Mutation(() => CronRun, {
    description:
      'Stops a running run of the cron wherever it runs: FAILED with failureReason `cancelled`, the minutes it ran charged. Refused unless it is RUNNING.',
  })
  cancelCronRun(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Cron id.' }) id: string,
    @Arg('run', () => ID, { description: 'Run id, `run_…`.' }) run: string,
  ): Promise<CronRun> {
    return ctx.services.crons.cancelRun(ctx.actor, app, id, run);
  }

  @FieldResolver(() => CronRun, { nullable: true, description: 'The most recent run; null before the first.' })
  lastRun(@Root() cron: Cron, @Ctx() ctx: Context): Promise<CronRun | null> {
    return ctx.loaders.lastRunByCronId.load(cron.id);
  }
}
