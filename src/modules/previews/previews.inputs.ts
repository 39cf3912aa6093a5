import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'The pull request to preview.' })
export class UpsertPreviewInput {
  @Field(() => Int, { description: 'Pull request number, at least 1.' })
  prNumber: number;

  @Field(() => String, {
    nullable: true,
    description: 'A source of the egg (`src_…`, from POST /v1/apps/{slug}/sources) to build and run; without it the preview runs the egg’s live image.',
  })
  source?: string | null;
}
