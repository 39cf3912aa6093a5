import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { App } from '../apps/app.entity';

export enum CronRunStatus {
  RUNNING = 'running',
  SUCCESS = 'success',
  FAILED = 'failed',
  SKIPPED_DEPLETED = 'skipped_depleted',
}
registerEnumType(CronRunStatus, {
  name: 'CronRunStatus',
  description: 'RUNNING, then SUCCESS (exit code 0) or FAILED; SKIPPED_DEPLETED when the owner’s energy was depleted at the due time.',
});

@ObjectType({ simpleResolvers: true, description: 'A scheduled task of an egg.' })
@Entity('crons')
export class Cron {
  @Field(() => ID, { description: 'Cron id, `cron_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => String, { description: '5-field cron expression, evaluated in UTC (Vixie cron semantics).' })
  @Column('text')
  schedule: string;

  @Field(() => String, { description: 'The command run on the schedule.' })
  @Column('text')
  command: string;

  @Field(() => Boolean, { description: 'False while paused.' })
  @Column('boolean')
  enabled: boolean;

  @Field(() => Date, { nullable: true, description: 'The next due time; null while paused.' })
  @Index()
  @Column('timestamptz', { nullable: true })
  nextRunAt: Date | null;

  @Field(() => Date, { description: 'When the cron was created.' })
  @Column('timestamptz')
  createdAt: Date;

  @Column('timestamptz')
  updatedAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One run of a cron.' })
@Entity('cron_runs')
// One scheduled run per due time across all gateways; run-now runs stand apart.
@Index(['cronId', 'scheduledAt'], { unique: true, where: 'NOT manual' })
@Index(['cronId', 'id'])
export class CronRun {
  @Field(() => ID, { description: 'Run id, `run_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  cronId: string;

  @ManyToOne(() => Cron, { onDelete: 'CASCADE' })
  cron?: Cron;

  @Field(() => CronRunStatus, { description: 'Where the run is.' })
  @Column('text')
  status: CronRunStatus;

  @Field(() => Int, { nullable: true, description: 'The command’s exit code; null while running or when skipped.' })
  @Column('integer', { nullable: true })
  exitCode: number | null;

  /** The due time this run is for (unique per cron among scheduled runs). */
  @Field(() => Date, { description: 'The due time the run is for (for a run-now, when it was asked for).' })
  @Column('timestamptz')
  scheduledAt: Date;

  @Field(() => Date, { nullable: true, description: 'When the command started; null when skipped.' })
  @Column('timestamptz', { nullable: true })
  startedAt: Date | null;

  @Field(() => Date, { nullable: true, description: 'When it ended; null while running.' })
  @Column('timestamptz', { nullable: true })
  finishedAt: Date | null;

  @Field(() => String, {
    nullable: true,
    description: 'Why a FAILED run failed when its exit code does not say: timed out, cancelled, no live deployment, or its gateway stopped. Null otherwise.',
  })
  @Column('text', { nullable: true })
  failureReason: string | null;

  @Field(() => Boolean, { description: 'True for a run started by runCronNow rather than the schedule.' })
  @Column('boolean', { default: false })
  manual: boolean;
}
