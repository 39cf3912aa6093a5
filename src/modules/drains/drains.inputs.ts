import { Field, InputType } from 'type-graphql';
import { LogDrainFormat } from './log-drain.entity';

@InputType({ description: 'A new log drain.' })
export class CreateLogDrainInput {
  @Field(() => String, { description: '`https://…` (NDJSON) or `syslog+tls://host:port` (syslog), on a public address.' })
  url: string;

  @Field(() => LogDrainFormat, { nullable: true, description: 'How lines are sent; default: SYSLOG for a `syslog+tls://` URL, else NDJSON.' })
  format?: LogDrainFormat | null;
}
