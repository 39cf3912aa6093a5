import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'The size of an egg’s volume.' })
export class ProvisionVolumeInput {
  @Field(() => Int, { description: 'Size in MB, at least 1 and at most the tier’s cap (free 1024, always_on 5120).' })
  sizeMb: number;
}
