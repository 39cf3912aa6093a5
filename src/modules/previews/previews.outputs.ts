import { Field, ObjectType } from 'type-graphql';
import { Preview } from './preview.entity';

@ObjectType({ simpleResolvers: true, description: 'The outcome of upsertPreview.' })
export class PreviewChange {
  @Field(() => Boolean, { description: 'True when the preview was created now; false when an existing one was redeployed.' })
  created: boolean;

  @Field(() => Preview, { description: 'The preview.' })
  preview: Preview;
}
