import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Column, Entity, Index, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import { App } from '../apps/app.entity';

@ObjectType({
  simpleResolvers: true,
  description: 'An upload of an egg’s folder (a .tar.gz), stored once per egg and content: the same bytes again are the same source.',
})
@Entity('sources')
@Unique('sources_app_id_sha256_key', ['appId', 'sha256'])
@Index(['appId', 'createdAt'])
export class Source {
  @Field(() => ID, { description: 'Source id, `src_…`; ids sort by upload time.' })
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  appId: string;

  @ManyToOne(() => App, { onDelete: 'CASCADE' })
  app?: App;

  @Field(() => String, { description: 'SHA-256 of the uploaded bytes (the .tar.gz as sent), in hex.' })
  @Column('text')
  sha256: string;

  @Field(() => Int, { description: 'Size in bytes of the upload as sent (compressed).' })
  @Column('integer')
  sizeBytes: number;

  /** How many `source_chunks` rows hold the bytes (seq 0 … chunkCount - 1). */
  @Column('integer')
  chunkCount: number;

  @Field(() => Date, { description: 'When the source was uploaded.' })
  @Column('timestamptz')
  createdAt: Date;
}

/**
 * One piece (about 1 MiB) of a source's bytes, in order. The foreign key is checked at commit, so
 * an upload writes its chunks as they arrive and its `sources` row last, once the bytes are known
 * to be a sound archive and their digest is known.
 */
@Entity('source_chunks')
export class SourceChunk {
  @PrimaryColumn('text')
  sourceId: string;

  @PrimaryColumn('integer')
  seq: number;

  @ManyToOne(() => Source, { onDelete: 'CASCADE', deferrable: 'INITIALLY DEFERRED' })
  source?: Source;

  @Column('bytea')
  data: Buffer;
}
