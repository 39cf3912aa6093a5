import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { App } from '../apps/app.entity';
import { Source } from '../sources/source.entity';

export enum DeploymentStatus {
  BUILDING = 'building',
  LIVE = 'live',
  FAILED = 'failed',
}
registerEnumType(DeploymentStatus, {
  name: 'DeploymentStatus',
  description: 'Lifecycle of a deployment: BUILDING, then LIVE or FAILED.',
});

@ObjectType({ simpleResolvers: true, description: 'One build and release of an egg.' })
@Entity('deployments')
@Index(['appId', 'id'])
export class Deployment {
  @Field(() => ID, { description: 'Deployment id, `dep_…`; ids sort by creation time.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => DeploymentStatus, { description: 'Current status.' })
  @Index()
  @Column('text')
  status: DeploymentStatus;

  @Field(() => String, { description: "This deployment's own public address." })
  @Column('text')
  url: string;

  /** The deploy env, sealed with the gateway's key; values are never returned. */
  @Column('text', { nullable: true })
  envSealed: string | null;

  @Field(() => [String], { description: 'Names of the environment variables the deployment was given; values are never returned.' })
  @Column('text', { array: true, default: () => "'{}'" })
  envKeys: string[];

  @Field(() => Int, { description: 'Memory in MB the deployment runs with.' })
  @Column('integer')
  memoryMb: number;

  @Field(() => Int, { description: 'Replicas the deployment runs as (each metered); set at deploy and restart.' })
  @Column('integer', { default: 1 })
  replicas: number;

  @Field(() => Int, { nullable: true, description: 'Size in MB of the volume mounted at /data; null: none.' })
  @Column('integer', { nullable: true })
  volumeMb: number | null;

  /** The uploaded source it builds from (the GraphQL field `source`); null: an image, or nothing to build. */
  @Index()
  @Column('text', { nullable: true })
  sourceId: string | null;

  @ManyToOne(() => Source)
  source?: Source;

  @Field(() => String, {
    nullable: true,
    description: 'The image it runs instead of building a source (`node:20-slim`, `registry:5000/team/app@sha256:…`); null when it builds a source.',
  })
  @Column('text', { nullable: true })
  image: string | null;

  @Field(() => String, { nullable: true, description: 'Why the deployment failed; null unless FAILED.' })
  @Column('text', { nullable: true })
  failureReason: string | null;

  @Column('text')
  createdById: string;

  /** Increases with every change, so a stream can tell stale events from new ones whatever the clock says. */
  @Column('integer', { default: 1 })
  revision: number;

  /** Up to when the running deployment has been charged energy. */
  @Column('timestamptz', { nullable: true })
  meteredUntil: Date | null;

  /** Since when the runtime has kept the egg asleep (idle); null while it runs. Not metered meanwhile. */
  @Column('timestamptz', { nullable: true })
  sleptAt: Date | null;

  /** When the router last passed the egg a request (written at most about once a second). */
  @Column('timestamptz', { nullable: true })
  lastRequestAt: Date | null;

  @Field(() => Date, {
    nullable: true,
    description:
      'Lines written before this moment were removed (HATCHERY_LOG_RETENTION_DAYS): its logs start at the oldest line kept. Null while nothing was removed.',
  })
  @Column('timestamptz', { nullable: true })
  logsRemovedBefore: Date | null;

  /** The newest seq retention removed: a writer resuming a log whose lines are all gone continues after it, not from 1. */
  @Column('integer', { nullable: true })
  logsRemovedSeq: number | null;

  /** While building: until when the builder holding it counts as alive (crash recovery). */
  @Column('timestamptz', { nullable: true })
  leaseUntil: Date | null;

  @Field(() => Date, { description: 'When the deployment was created.' })
  @Column('timestamptz')
  createdAt: Date;

  @Field(() => Date, { description: 'When the deployment last changed.' })
  @Column('timestamptz')
  updatedAt: Date;

  @Field(() => Date, { nullable: true, description: 'When the build ended (LIVE or FAILED); null while BUILDING.' })
  @Column('timestamptz', { nullable: true })
  finishedAt: Date | null;
}
