import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import { App } from '../apps/app.entity';
import { Source } from '../sources/source.entity';

export enum PreviewStatus {
  BUILDING = 'building',
  READY = 'ready',
  FAILED = 'failed',
}
registerEnumType(PreviewStatus, { name: 'PreviewStatus', description: 'BUILDING, then READY or FAILED; again BUILDING on each update.' });

export enum PreviewResourceKind {
  ROUTE = 'route',
  DATABASE = 'database',
  ADDON = 'addon',
}
registerEnumType(PreviewResourceKind, { name: 'PreviewResourceKind', description: 'What a preview owns: routes, a database, addons.' });

@ObjectType({ simpleResolvers: true, description: 'A preview environment of an egg for one pull request.' })
@Entity('previews')
@Unique(['appId', 'prNumber'])
export class Preview {
  @Field(() => ID, { description: 'Preview id, `prv_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => Int, { description: 'The pull request number.' })
  @Column('integer')
  prNumber: number;

  @Field(() => String, { description: '`<egg>-pr-<n>`.' })
  @Column('text')
  slug: string;

  @Field(() => String, { description: 'Public address of the preview.' })
  @Column('text')
  url: string;

  @Field(() => PreviewStatus, { description: 'Build status of the preview.' })
  @Column('text')
  status: PreviewStatus;

  @Field(() => String, { nullable: true, description: 'Why a FAILED preview failed (its build step, no live deployment to preview…); null otherwise.' })
  @Column('text', { nullable: true })
  failureReason: string | null;

  /** The uploaded source it builds (given with the request); null: it runs the egg's live image. */
  @Index()
  @Column('text', { nullable: true })
  sourceId: string | null;

  @ManyToOne(() => Source)
  source?: Source;

  /** Bumped on every (re)build, so a superseded build cannot overwrite the status. */
  @Column('integer', { default: 1 })
  generation: number;

  @Column('timestamptz', { nullable: true })
  leaseUntil: Date | null;

  @Field(() => Date, { description: 'When the preview is torn down automatically; each update extends it.' })
  @Index()
  @Column('timestamptz')
  expiresAt: Date;

  @Field(() => Date, { description: 'When the preview was created.' })
  @Column('timestamptz')
  createdAt: Date;

  @Column('timestamptz')
  updatedAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'A route, database or addon a preview owns; removed with it.' })
@Entity('preview_resources')
export class PreviewResource {
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  previewId: string;

  @ManyToOne(() => Preview, { onDelete: 'CASCADE' })
  preview?: Preview;

  @Field(() => PreviewResourceKind, { description: 'What it is.' })
  @Column('text')
  kind: PreviewResourceKind;

  @Field(() => String, { description: 'Its name (a host name for a route).' })
  @Column('text')
  name: string;

  /** The runtime's handle for it, for teardown. */
  @Column('text')
  externalId: string;
}
