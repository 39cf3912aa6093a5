import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'The pull request to preview.' })
export class UpsertPreviewInput {
  @Field(() => Int, { description: 'Pull request number, at least 1.' })
  prNumber: number;
}
