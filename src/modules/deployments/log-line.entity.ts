import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Column, Entity, ManyToOne, PrimaryColumn } from 'typeorm';
import { Deployment } from './deployment.entity';

export enum LogType {
  BUILD = 'build',
  RUNTIME = 'runtime',
}
registerEnumType(LogType, { name: 'LogType', description: 'BUILD lines come from the build, RUNTIME lines from the running egg.' });

@ObjectType({ simpleResolvers: true, description: 'One line of a deployment log.' })
@Entity('log_lines')
export class LogLine {
  @PrimaryColumn('text')
  deploymentId: string;

  @ManyToOne(() => Deployment, { onDelete: 'CASCADE' })
  deployment?: Deployment;

  @Field(() => Int, { description: 'Position in the deployment log, increasing from 1; the resume point for streams.' })
  @PrimaryColumn('integer')
  seq: number;

  @Field(() => Date, { description: 'When the line was written.' })
  @Column('timestamptz')
  timestamp: Date;

  @Field(() => LogType, { description: 'Where the line comes from.' })
  @Column('text')
  type: LogType;

  @Field(() => String, { description: 'The text of the line.' })
  @Column('text')
  message: string;
}
