import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, PrimaryColumn, ManyToOne } from 'typeorm';
import { User } from './user.entity';

@ObjectType({ simpleResolvers: true, description: 'An API token. The secret itself is shown once, at creation; only its hash is stored.' })
@Entity('api_tokens')
@Index(['userId'])
export class ApiToken {
  @Field(() => ID, { description: 'Token id, `tok_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  user?: User;

  @Field(() => String, { description: 'A label chosen by the owner.' })
  @Column('text')
  name: string;

  /** SHA-256 of the token; the token itself is never stored. */
  @Column('text', { unique: true })
  tokenHash: string;

  @Field(() => String, { description: 'The last four characters of the token, to tell tokens apart.' })
  @Column('text')
  lastFour: string;

  @Field(() => Date, { nullable: true, description: 'When the token stops working; null: never.' })
  @Column('timestamptz', { nullable: true })
  expiresAt: Date | null;

  @Field(() => Date, { nullable: true, description: 'When the token was revoked; null: not revoked.' })
  @Column('timestamptz', { nullable: true })
  revokedAt: Date | null;

  @Field(() => Date, { nullable: true, description: 'When the token last authenticated a request (to the minute).' })
  @Column('timestamptz', { nullable: true })
  lastUsedAt: Date | null;

  @Field(() => Date, { description: 'When the token was created.' })
  @Column('timestamptz')
  createdAt: Date;
}
