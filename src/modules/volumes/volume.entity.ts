import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, ManyToOne, PrimaryColumn } from 'typeorm';
import { App } from '../apps/app.entity';

export enum VolumeStatus {
  ACTIVE = 'active',
  GRACE_DELETING = 'grace_deleting',
}
registerEnumType(VolumeStatus, {
  name: 'VolumeStatus',
  description: 'ACTIVE: mounted at /data from the next deploy. GRACE_DELETING: detached; erased at `eraseAt` unless restored.',
});

export const VOLUME_MOUNT = '/data';
export const VOLUME_GRACE_MS = 7 * 24 * 3600 * 1000;

@ObjectType({ simpleResolvers: true, description: 'The persistent volume of an egg, mounted at /data.' })
@Entity('volumes')
export class Volume {
  /** One volume per egg. */
  @PrimaryColumn('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => Int, { description: 'Size in MB.' })
  @Column('integer')
  sizeMb: number;

  @Field(() => VolumeStatus, { description: 'ACTIVE or GRACE_DELETING.' })
  @Column('text')
  status: VolumeStatus;

  @Field(() => Date, { nullable: true, description: 'When a GRACE_DELETING volume is erased; null while ACTIVE.' })
  @Column('timestamptz', { nullable: true })
  eraseAt: Date | null;

  @Field(() => Date, { description: 'When the volume was provisioned.' })
  @Column('timestamptz')
  createdAt: Date;

  @Column('timestamptz')
  updatedAt: Date;
}
