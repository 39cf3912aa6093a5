import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from '../accounts/user.entity';

export enum EnergyBucket {
  DAILY = 'daily',
  WEEKLY = 'weekly',
  BONUS = 'bonus',
  PACK = 'pack',
}
registerEnumType(EnergyBucket, { name: 'EnergyBucket', description: 'Where energy minutes are kept; consumed in this order.' });

/** Consumption order of the service document. */
export const CONSUMPTION_ORDER = [EnergyBucket.DAILY, EnergyBucket.WEEKLY, EnergyBucket.BONUS, EnergyBucket.PACK] as const;

export enum EnergyReason {
  GRANT = 'grant',
  DAILY_RESET = 'daily_reset',
  WEEKLY_RESET = 'weekly_reset',
  DEPLOYMENT = 'deployment',
  CRON_RUN = 'cron_run',
  PACK_PURCHASE = 'pack_purchase',
  OPERATOR = 'operator',
}
registerEnumType(EnergyReason, {
  name: 'EnergyReason',
  description:
    'GRANT: the first allowance; DAILY_RESET / WEEKLY_RESET: back to the allowance; DEPLOYMENT: a live deployment, per minute; CRON_RUN: a cron run; PACK_PURCHASE: a bought pack; OPERATOR: set by the operator.',
});

/** The balances of one account; always equal to the sums of its ledger. */
@Entity('energy_accounts')
export class EnergyAccount {
  @PrimaryColumn('text')
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  user?: User;

  @Column('integer')
  daily: number;

  @Column('integer')
  weekly: number;

  @Column('integer')
  bonus: number;

  @Column('integer')
  pack: number;

  /** The next 00:00 UTC: the daily bucket is refilled at the first touch from then on. */
  @Column('timestamptz')
  dailyResetAt: Date;

  /** The next Monday 00:00 UTC. */
  @Column('timestamptz')
  weeklyResetAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One change of an energy bucket.' })
@Entity('energy_ledger')
@Index(['userId', 'id'])
export class EnergyLedgerEntry {
  @Field(() => ID, { description: 'Entry id, `led_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  user?: User;

  @Field(() => EnergyBucket, { description: 'The bucket changed.' })
  @Column('text')
  bucket: EnergyBucket;

  @Field(() => Int, { description: 'Minutes added (positive) or taken (negative).' })
  @Column('integer')
  delta: number;

  @Field(() => Int, { description: 'The bucket’s balance after the change.' })
  @Column('integer')
  balanceAfter: number;

  @Field(() => EnergyReason, { description: 'Why it changed.' })
  @Column('text')
  reason: EnergyReason;

  @Field(() => String, { nullable: true, description: 'What caused it: a deployment, cron run or checkout session id.' })
  @Column('text', { nullable: true })
  ref: string | null;

  @Field(() => Date, { description: 'When it changed.' })
  @Column('timestamptz')
  createdAt: Date;
}
