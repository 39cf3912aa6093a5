import { Field, InputType } from 'type-graphql';

@InputType({ description: 'A new webhook.' })
export class CreateWebhookInput {
  @Field(() => String, { description: 'An https URL on a public address.' })
  url: string;

  @Field(() => [String], { description: 'Events to receive: `deploy`.' })
  events: string[];
}
