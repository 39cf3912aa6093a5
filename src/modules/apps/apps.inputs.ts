import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'A new egg.' })
export class CreateAppInput {
  @Field(() => String, { description: 'Slug: `^[a-z][a-z0-9-]{1,38}[a-z0-9]$`, unique.' })
  slug: string;
}

@InputType({ description: 'Resource overrides of an egg.' })
export class UpdateResourcesInput {
  @Field(() => Int, {
    nullable: true,
    description: 'Memory in MB, at least 64 and at most the tier’s cap; null clears the override; absent leaves it as it is.',
  })
  memoryMb?: number | null;

  @Field(() => Int, {
    nullable: true,
    description:
      'Replicas (instances behind the router), at least 1 and at most the tier’s cap (free 1, always-on 3 unless the operator says otherwise); null clears the override (one); absent leaves it as it is. Applies from the next deploy or restart.',
  })
  replicas?: number | null;
}
