import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from '../accounts/user.entity';
import { App } from './app.entity';

/** A user other than the owner who may read and deploy an egg. */
@Entity('collaborators')
@Index(['userId'])
export class Collaborator {
  @PrimaryColumn('text')
  appId: string;

  @PrimaryColumn('text')
  userId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  user?: User;

  @Column('timestamptz')
  createdAt: Date;
}
