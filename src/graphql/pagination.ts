import { ArgsType, ClassType, Field, Int, ObjectType } from 'type-graphql';
import type { PageInfo as PageInfoData } from '../db/paging';

@ObjectType({ simpleResolvers: true, description: 'Relay page information.' })
export class PageInfo implements PageInfoData {
  @Field(() => Boolean, { description: 'Whether more items follow this page.' })
  hasNextPage: boolean;

  @Field(() => Boolean, { description: 'Always false: lists page forwards only.' })
  hasPreviousPage: boolean;

  @Field(() => String, { nullable: true, description: 'Cursor of the first item of the page.' })
  startCursor: string | null;

  @Field(() => String, { nullable: true, description: 'Cursor of the last item; pass it as `after` for the next page.' })
  endCursor: string | null;
}

/** Builds the `XConnection` and `XEdge` object types for a node type. */
export function Connection<T extends object>(node: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`, { simpleResolvers: true, description: `An edge in a ${name} connection.` })
  class EdgeType {
    @Field(() => node, { description: 'The item.' })
    node: T;

    @Field(() => String, { description: 'Opaque cursor of this item.' })
    cursor: string;
  }

  @ObjectType(`${name}Connection`, { simpleResolvers: true, description: `A page of ${name} items.` })
  class ConnectionType {
    @Field(() => [EdgeType], { description: 'The items with their cursors.' })
    edges: EdgeType[];

    @Field(() => [node], { description: 'The items, without cursors.' })
    nodes: T[];

    @Field(() => PageInfo, { description: 'Where this page sits in the list.' })
    pageInfo: PageInfo;
  }
  return ConnectionType;
}

@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: 'Page size, 1 to 100; default 20.' })
  first?: number | null;

  @Field(() => String, { nullable: true, description: 'Cursor after which the page starts (`pageInfo.endCursor`).' })
  after?: string | null;
}
