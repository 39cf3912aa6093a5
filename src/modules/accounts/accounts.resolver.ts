import { Arg, Args, Ctx, Field, ID, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Context } from '../../graphql/context';
import { Connection, PageArgs } from '../../graphql/pagination';
import { ApiToken } from './api-token.entity';
import { User } from './user.entity';

const ApiTokenConnection = Connection(ApiToken, 'ApiToken');

@ObjectType({ simpleResolvers: true, description: 'A new API token. `token` is shown only here.' })
class CreatedApiToken {
  @Field(() => String, { description: 'The bearer token, `hatch_…`. Store it now: it cannot be shown again.' })
  token: string;

  @Field(() => ApiToken, { description: 'The token record.' })
  apiToken: ApiToken;
}

@Resolver()
export class AccountsResolver {
  @Query(() => User, { description: 'The account the bearer token belongs to.' })
  viewer(@Ctx() ctx: Context): User {
    return ctx.actor.user;
  }

  @Query(() => ApiTokenConnection, { description: "The caller's API tokens, newest first." })
  apiTokens(@Ctx() ctx: Context, @Args(() => PageArgs) page: PageArgs) {
    return ctx.services.accounts.listApiTokens(ctx.actor, page);
  }

  @Mutation(() => CreatedApiToken, {
    description: 'Creates an API token for the caller (at most 50 live, i.e. unrevoked and unexpired, per account unless the operator set another cap).',
  })
  createApiToken(
    @Ctx() ctx: Context,
    @Arg('name', () => String, { description: 'A label, 1 to 100 characters.' }) name: string,
    @Arg('expiresInDays', () => Int, { nullable: true, description: 'Days until it expires, 1 to 3650; omit for no expiry.' })
    expiresInDays?: number | null,
  ): Promise<CreatedApiToken> {
    return ctx.services.accounts.createApiToken(ctx.actor, { name, expiresInDays });
  }

  @Mutation(() => ApiToken, { description: 'Revokes one of the caller’s tokens; it stops working at once.' })
  revokeApiToken(@Ctx() ctx: Context, @Arg('id', () => ID, { description: 'Token id.' }) id: string): Promise<ApiToken> {
    return ctx.services.accounts.revokeApiToken(ctx.actor, id);
  }
}
