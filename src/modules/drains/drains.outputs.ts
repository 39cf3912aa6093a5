import { Field, ObjectType } from 'type-graphql';
import { LogDrain } from './log-drain.entity';

@ObjectType({ simpleResolvers: true, description: 'A new log drain with its signing secret, shown only here.' })
export class CreatedLogDrain {
  @Field(() => LogDrain, { description: 'The drain.' })
  logDrain: LogDrain;

  @Field(() => String, {
    nullable: true,
    description: 'The Standard Webhooks signing secret of an NDJSON drain, `whsec_…`. Store it now: it is never shown again. Null for syslog.',
  })
  secret: string | null;
}
