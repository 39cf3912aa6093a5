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
    description: 'Memory in MB, at least 64 and at most the tier’s cap; null clears the override. Required.',
  })
  memoryMb?: number | null;
}
