import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Check, Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from '../accounts/user.entity';

export enum Tier {
  FREE = 'free',
  ALWAYS_ON = 'always_on',
}
registerEnumType(Tier, { name: 'Tier', description: 'The plan an egg runs on; sets its resource caps.' });

@ObjectType({ simpleResolvers: true, description: 'An egg: an app on the platform, addressed by its slug.' })
@Entity('apps')
// `--` separates a slug from the rest of a deployment's or preview's host (see hosts.ts).
@Check('apps_slug_single_dashes', `"slug" NOT LIKE '%--%'`)
export class App {
  @Field(() => ID, { description: 'Egg id, `app_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Field(() => String, { description: 'Unique address of the egg: lower-case letters, digits and single dashes (never `--`), 3–40 characters.' })
  @Column('text', { unique: true })
  slug: string;

  @Index()
  @Column('text')
  ownerId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  owner?: User;

  @Field(() => Tier, { description: 'The tier; set by the operator.' })
  @Column('text', { default: Tier.FREE })
  tier: Tier;

  @Field(() => Int, {
    nullable: true,
    description: 'Memory override in MB; null: the runtime profile’s default. Applies from the next deploy, restart or wake.',
  })
  @Column('integer', { nullable: true })
  memoryMb: number | null;

  @Field(() => Int, {
    nullable: true,
    description: 'Replicas override; null: one. Applies from the next deploy or restart.',
  })
  @Column('integer', { nullable: true })
  replicas: number | null;

  /** The deployment the egg's main URL points at: the newest one that went live. */
  @Column('text', { nullable: true })
  currentDeploymentId: string | null;

  /** The gateway that runs the current deployment (BuildSupervisor's runner lease). */
  @Column('text', { nullable: true })
  runnerId: string | null;

  /** Until when that gateway's claim holds unless it renews it; then another may claim the egg. */
  @Column('timestamptz', { nullable: true })
  runnerLeaseUntil: Date | null;

  @Field(() => Date, { description: 'When the egg was created.' })
  @Column('timestamptz')
  createdAt: Date;
}

export interface TierProfile {
  /** The runtime profile's memory when the egg has no override. */
  defaultMemoryMb: number;
  memoryCapMb: number;
  volumeCapMb: number;
  /** Whether the runtime may put an idle egg to sleep. */
  sleeps: boolean;
}

export const TIERS: Record<Tier, TierProfile> = {
  [Tier.FREE]: { defaultMemoryMb: 256, memoryCapMb: 512, volumeCapMb: 1024, sleeps: true },
  [Tier.ALWAYS_ON]: { defaultMemoryMb: 512, memoryCapMb: 1024, volumeCapMb: 5120, sleeps: false },
};

/** The most replicas an egg of each tier may run, unless the operator says otherwise (HATCHERY_MAX_REPLICAS_*). */
export const DEFAULT_REPLICA_CAPS: Record<Tier, number> = { [Tier.FREE]: 1, [Tier.ALWAYS_ON]: 3 };

/** How many replicas the egg runs from its next deploy or restart; never above the cap. */
export function effectiveReplicas(app: Pick<App, 'tier' | 'replicas'>, caps: Record<Tier, number> = DEFAULT_REPLICA_CAPS): number {
  return Math.max(1, Math.min(app.replicas ?? 1, caps[app.tier]));
}

/** The memory the egg runs with from its next deploy, restart or wake; never above the cap. */
export function effectiveMemoryMb(app: Pick<App, 'tier' | 'memoryMb'>): number {
  const profile = TIERS[app.tier];
  return Math.min(app.memoryMb ?? profile.defaultMemoryMb, profile.memoryCapMb);
}
