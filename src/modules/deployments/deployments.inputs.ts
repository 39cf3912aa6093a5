import { GraphQLJSONObject } from 'graphql-scalars';
import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { PageArgs } from '../../graphql/pagination';
import { DeploymentStatus } from './deployment.entity';
import { LogType } from './log-line.entity';

@InputType({ description: 'What to deploy.' })
export class DeployInput {
  @Field(() => String, { description: 'Slug of an egg the caller owns or collaborates on.' })
  project: string;

  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'Environment variables: names matching `^[A-Za-z_][A-Za-z0-9_]*$` (except `__proto__`) to string values. Stored encrypted; never returned.',
  })
  env?: Record<string, unknown> | null;

  @Field(() => ID, {
    nullable: true,
    description:
      'A source of this egg (`src_…`, uploaded with `POST /v1/apps/{slug}/sources`) to build. Not with `image`. With neither, the egg’s newest source.',
  })
  source?: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      'An image to run instead of building a source: `[registry[:port]/]name[:tag][@digest]`, the name lower case and at most 255 characters. Not with `source`.',
  })
  image?: string | null;
}

@ArgsType()
export class DeploymentsPageArgs extends PageArgs {
  @Field(() => DeploymentStatus, { nullable: true, description: 'Only deployments in this status.' })
  status?: DeploymentStatus | null;
}

@ArgsType()
export class DeploymentsArgs extends DeploymentsPageArgs {
  @Field(() => String, { nullable: true, description: 'Only deployments of this egg (slug).' })
  project?: string | null;
}

/** The arguments of both log subscriptions, `deploymentLogs` and `deploymentLogBatches`. */
@ArgsType()
export class LogStreamArgs {
  @Field(() => ID, { description: 'Deployment id.' })
  id: string;

  @Field(() => LogType, { nullable: true, description: 'Only lines of this type.' })
  type?: LogType | null;

  @Field(() => Date, { nullable: true, description: 'Only lines written after this moment.' })
  since?: Date | null;

  @Field(() => String, { nullable: true, description: 'Only lines passing this filter (as `Deployment.logs`’s `q`), stored and live.' })
  q?: string | null;
}

/** The arguments of `appLogs`. */
@ArgsType()
export class AppLogStreamArgs {
  @Field(() => String, { description: 'The egg (slug).' })
  app: string;

  @Field(() => Date, { nullable: true, description: 'Only lines written after this moment; all stored lines when omitted.' })
  since?: Date | null;

  @Field(() => String, { nullable: true, description: 'Only lines passing this filter (as `App.logs`’s `q`, `@deployment:<id>` too), stored and live.' })
  q?: string | null;
}

/** The arguments of `Deployment.logs` (and, with `@deployment:<id>` in `q`, of `App.logs`). */
@ArgsType()
export class LogsArgs {
  @Field(() => LogType, { nullable: true, description: 'Only lines of this type; both when omitted.' })
  type?: LogType | null;

  @Field(() => Date, { nullable: true, description: 'Only lines written after this moment (exclusive).' })
  since?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Only lines written before this moment (exclusive).' })
  until?: Date | null;

  @Field(() => Int, {
    nullable: true,
    description: 'The last N matching lines (1 to 1000), still oldest first; not with `first` or `after`. Its `endCursor` continues forward.',
  })
  tail?: number | null;

  @Field(() => String, {
    nullable: true,
    description:
      'A filter: words and `"phrases"` that must all be in the line (case-insensitive), `-word` or `-"phrase"` that must not, `@type:build|runtime`, `@stream:stdout|stderr` (on an egg’s logs `@deployment:<id>` too). A bad one is an error naming `q` and the position.',
  })
  q?: string | null;

  @Field(() => Int, { nullable: true, description: 'Page size, 1 to 1000; default 100.' })
  first?: number | null;

  @Field(() => String, { nullable: true, description: 'Cursor after which the page starts (`pageInfo.endCursor`).' })
  after?: string | null;
}
