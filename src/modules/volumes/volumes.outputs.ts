import { Field, ObjectType } from 'type-graphql';
import { Volume } from './volume.entity';

@ObjectType({ simpleResolvers: true, description: 'The outcome of provisionVolume.' })
export class VolumeChange {
  @Field(() => Boolean, { description: 'True when the volume was provisioned now; false when it was resized or restored.' })
  created: boolean;

  @Field(() => Volume, { description: 'The volume.' })
  volume: Volume;
}
