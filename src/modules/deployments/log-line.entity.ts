import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { Deployment } from './deployment.entity';

export enum LogType {
  BUILD = 'build',
  RUNTIME = 'runtime',
}
registerEnumType(LogType, { name: 'LogType', description: 'BUILD lines come from the build, RUNTIME lines from the running egg.' });

export enum LogStream {
  STDOUT = 'stdout',
  STDERR = 'stderr',
}
registerEnumType(LogStream, { name: 'LogStream', description: "The egg's output a line came from: its standard output or its standard error." });

@ObjectType({ simpleResolvers: true, description: 'One line of a deployment log.' })
@Entity('log_lines')
// Trigram index on the text, so `q` searches big logs fast (made by migration: TypeORM cannot say `gin_trgm_ops`).
@Index('log_lines_message_trgm', { synchronize: false })
// An egg's lines in time order, for its logs across deployments.
@Index('log_lines_app_time', ['appId', 'timestamp', 'deploymentId', 'seq'])
export class LogLine {
  @Field(() => ID, { description: 'The deployment that wrote the line.' })
  @PrimaryColumn('text')
  deploymentId: string;

  /** The deployment's egg, copied from it when the line is stored (an egg's logs are read by it). */
  @Column('text')
  appId: string;

  @ManyToOne(() => Deployment, { onDelete: 'CASCADE' })
  deployment?: Deployment;

  @Field(() => Int, { description: 'Position in the deployment log, increasing from 1; the resume point for streams.' })
  @PrimaryColumn('integer')
  seq: number;

  /**
   * The day (UTC) the line was stored: the table is partitioned by it, a partition a day, and
   * retention drops whole partitions (log-retention.ts). Set by the database.
   */
  // As TypeORM reads it back (it drops the casts): the column's default is ((now() AT TIME ZONE 'UTC'))::date.
  @PrimaryColumn('date', { default: () => "((now() AT TIME ZONE 'UTC'))" })
  day?: string;

  @Field(() => Date, { description: 'When the line was written.' })
  @Column('timestamptz')
  timestamp: Date;

  @Field(() => LogType, { description: 'Where the line comes from.' })
  @Column('text')
  type: LogType;

  @Field(() => String, { description: 'The text of the line.' })
  @Column('text')
  message: string;

  @Field(() => LogStream, {
    nullable: true,
    description:
      "The egg's output the line came from, where the runtime knows it (Docker does); null for the platform's own lines (build steps, restarts, requests).",
  })
  @Column('text', { nullable: true })
  stream: LogStream | null;

  /**
   * The egg's replica whose output the line is, from 1 (0: the runtime could not tell which);
   * null for every line the platform writes, even into the runtime log (notes, request lines, cron
   * runs' output). A runner adopting a replica's container passes on only what that replica wrote
   * after its newest stored line: the platform's lines are stamped by the gateway's clock, not the
   * container's, and would hide the container's lines not stored yet.
   */
  @Column('smallint', { nullable: true })
  replica?: number | null;
}
