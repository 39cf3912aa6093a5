import { Field, InputType, Int, ObjectType } from 'type-graphql';
import { Volume } from './volume.entity';

@InputType({ description: 'The size of an egg’s volume.' })
export class ProvisionVolumeInput {
  @Field(() => Int, { description: 'Size in MB, at least 1 and at most the tier’s cap (free 1024, always_on 5120).' })
  sizeMb: number;
}

@ObjectType({ simpleResolvers: true, description: 'The outcome of provisionVolume.' })
export class VolumeChange {
  @Field(() => Boolean, { description: 'True when the volume was provisioned now; false when it was resized or restored.' })
  created: boolean;

  @Field(() => Volume, { description: 'The volume.' })
  volume: Volume;
}
