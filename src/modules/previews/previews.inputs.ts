import { Field, InputType, Int, ObjectType } from 'type-graphql';
import { Preview } from './preview.entity';

@InputType({ description: 'The pull request to preview.' })
export class UpsertPreviewInput {
  @Field(() => Int, { description: 'Pull request number, at least 1.' })
  prNumber: number;
}

@ObjectType({ simpleResolvers: true, description: 'The outcome of upsertPreview.' })
export class PreviewChange {
  @Field(() => Boolean, { description: 'True when the preview was created now; false when an existing one was redeployed.' })
  created: boolean;

  @Field(() => Preview, { description: 'The preview.' })
  preview: Preview;
}
