import { Arg, Args, Ctx, ID, Query, Resolver } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { Source } from './source.entity';

const SourceConnection = Connection(Source, 'Source');

/**
 * Sources are uploaded over REST only (`POST /v1/apps/{slug}/sources`, a .tar.gz body: GraphQL
 * has no binary upload); GraphQL reads them, and `deploy(input: {source})` builds one.
 */
@Resolver(() => Source)
export class SourcesResolver {
  @Query(() => SourceConnection, { description: 'The egg’s uploaded sources, newest first. Upload one with `POST /v1/apps/{slug}/sources` (REST).' })
  sources(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.sources.list(ctx.actor, app, page);
  }

  @Query(() => Source, { description: 'One uploaded source of the egg.' })
  source(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('id', () => ID, { description: 'Source id.' }) id: string,
  ): Promise<Source> {
    return ctx.services.sources.get(ctx.actor, app, id);
  }
}
