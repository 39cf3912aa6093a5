import { Args, Ctx, Field, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { EnergyLedgerEntry } from './energy.entity';
import { EnergyBalance } from './energy.service';

const EnergyLedgerConnection = Connection(EnergyLedgerEntry, 'EnergyLedgerEntry');

@ObjectType({ simpleResolvers: true, description: 'The caller’s energy budget in minutes. Consumed daily, then weekly, then bonus, then pack.' })
class Energy implements EnergyBalance {
  @Field(() => Int, { description: 'Minutes left today; refilled to the allowance at 00:00 UTC.' })
  daily: number;

  @Field(() => Int, { description: 'Minutes left this week; refilled to the allowance on Monday 00:00 UTC.' })
  weekly: number;

  @Field(() => Int, { description: 'Bonus minutes.' })
  bonus: number;

  @Field(() => Int, { description: 'Bought pack minutes; they never expire.' })
  pack: number;

  @Field(() => Int, { description: 'The sum of the four buckets.' })
  total: number;

  @Field(() => Boolean, { description: 'True when every bucket is empty: cron runs are skipped (deploys are not refused).' })
  depleted: boolean;

  @Field(() => Date, { description: 'When the daily bucket is next refilled.' })
  dailyResetsAt: Date;

  @Field(() => Date, { description: 'When the weekly bucket is next refilled.' })
  weeklyResetsAt: Date;
}

@Resolver()
export class EnergyResolver {
  @Query(() => Energy, { description: 'The caller’s energy balance.' })
  energy(@Ctx() ctx: Context): Promise<Energy> {
    return ctx.services.energy.balance(ctx.actor);
  }

  @Query(() => EnergyLedgerConnection, { description: 'Every change of the caller’s energy, newest first.' })
  energyLedger(@Ctx() ctx: Context, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.energy.ledger(ctx.actor, page);
  }
}
