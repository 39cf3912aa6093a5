import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { App } from '../apps/app.entity';
import { Deployment } from '../deployments/deployment.entity';

export enum LogDrainFormat {
  NDJSON = 'ndjson',
  SYSLOG = 'syslog',
}
registerEnumType(LogDrainFormat, {
  name: 'LogDrainFormat',
  description: 'NDJSON: signed https POSTs of JSON lines (`https://…`). SYSLOG: RFC 5424 messages over TLS, octet-counted (`syslog+tls://host:port`).',
});

export enum LogDrainStatus {
  ACTIVE = 'active',
  DISABLED = 'disabled',
}
registerEnumType(LogDrainStatus, {
  name: 'LogDrainStatus',
  description: 'ACTIVE while it ships; DISABLED once its receiver failed for too long (see `disabledReason`).',
});

@ObjectType({
  simpleResolvers: true,
  description: 'A receiver that gets every log line of an egg’s deployments (build and runtime), written after the drain was created.',
})
@Entity('log_drains')
export class LogDrain {
  @Field(() => ID, { description: 'Log drain id, `drn_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => String, { description: 'Where lines go: `https://…` (NDJSON) or `syslog+tls://host:port` (syslog).' })
  @Column('text')
  url: string;

  @Field(() => LogDrainFormat, { description: 'How lines are sent.' })
  @Column('text')
  format: LogDrainFormat;

  @Field(() => LogDrainStatus, { description: 'Whether it ships.' })
  @Column('text')
  status: LogDrainStatus;

  @Field(() => String, { nullable: true, description: 'Why the drain was disabled; null while active.' })
  @Column('text', { nullable: true })
  disabledReason: string | null;

  @Field(() => String, { nullable: true, description: 'Why the latest attempt failed; null once one succeeded.' })
  @Column('text', { nullable: true })
  lastError: string | null;

  @Field(() => Date, { nullable: true, description: 'When the receiver last accepted a batch; null before the first.' })
  @Column('timestamptz', { nullable: true })
  lastDeliveredAt: Date | null;

  /** The Standard Webhooks secret (`whsec_…`) of an NDJSON drain, sealed with the gateway's key; null for syslog. */
  @Column('text', { nullable: true })
  secretSealed: string | null;

  /** Attempts in a row that failed; reset by a success. */
  @Column('integer', { default: 0 })
  consecutiveFailures: number;

  /** While failing: when the next attempt is due. */
  @Column('timestamptz', { nullable: true })
  retryAt: Date | null;

  /** The gateway shipping it, until `leaseUntil` (src/db/lease.ts). */
  @Column('text', { nullable: true })
  leaseHolder: string | null;

  @Column('timestamptz', { nullable: true })
  leaseUntil: Date | null;

  @Field(() => Date, { description: 'When the drain was created: it ships the lines written from then on.' })
  @Column('timestamptz')
  createdAt: Date;
}

/** How far a drain has shipped a deployment's log: every line with `seq <= ackedSeq` was accepted. */
@Entity('log_drain_cursors')
export class LogDrainCursor {
  @PrimaryColumn('text')
  drainId: string;

  @ManyToOne(() => LogDrain, { onDelete: 'CASCADE' })
  drain?: LogDrain;

  @Index()
  @PrimaryColumn('text')
  deploymentId: string;

  @ManyToOne(() => Deployment, { onDelete: 'CASCADE' })
  deployment?: Deployment;

  @Column('integer')
  ackedSeq: number;
}
