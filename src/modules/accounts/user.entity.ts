import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';

@ObjectType({ simpleResolvers: true, description: 'An account. Owns eggs and API tokens.' })
@Entity('users')
export class User {
  @Field(() => ID, { description: 'Account id, `usr_…`.' })
  @PrimaryColumn('text')
  id: string;

  @Field(() => String, { description: 'Email address; unique across accounts.' })
  @Column('text', { unique: true })
  email: string;

  @Field(() => Date, { description: 'When the account was created.' })
  @Column('timestamptz')
  createdAt: Date;
}
