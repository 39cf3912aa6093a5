import { Field, InputType } from 'type-graphql';

@InputType({ description: 'A new cron.' })
export class CreateCronInput {
  @Field(() => String, {
    description: '5 fields (minute hour day-of-month month day-of-week), UTC, with lists, ranges, steps and month/day names.',
  })
  schedule: string;

  @Field(() => String, { description: 'The command to run.' })
  command: string;
}
