import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Uploaded sources (src/modules/sources) in ~1 MiB bytea chunks. The chunks are gzip data
 * already: stored out of line without PostgreSQL trying to compress them again (STORAGE EXTERNAL).
 */
export class Sources1795530789255 implements MigrationInterface {
  name = 'Sources1795530789255';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"sources\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"sha256\" text NOT NULL, \"size_bytes\" integer NOT NULL, \"chunk_count\" integer NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"sources_app_id_sha256_key\" UNIQUE (\"app_id\", \"sha256\"), CONSTRAINT \"PK_85523beafe5a2a6b90b02096443\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_36e49273af72cc527c51162823\" ON \"sources\"  (\"app_id\", \"created_at\") ");
    await queryRunner.query("CREATE TABLE \"source_chunks\" (\"source_id\" text NOT NULL, \"seq\" integer NOT NULL, \"data\" bytea NOT NULL, CONSTRAINT \"PK_99bb9b9af56ca7983bacbf6dd19\" PRIMARY KEY (\"source_id\", \"seq\"))");
    await queryRunner.query('ALTER TABLE "source_chunks" ALTER COLUMN "data" SET STORAGE EXTERNAL');
    await queryRunner.query("ALTER TABLE \"sources\" ADD CONSTRAINT \"FK_38af0603d726413ffa787b6d85e\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"source_chunks\" ADD CONSTRAINT \"FK_bc0c1999849aaadc75bc0512942\" FOREIGN KEY (\"source_id\") REFERENCES \"sources\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION DEFERRABLE INITIALLY DEFERRED");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"source_chunks\" DROP CONSTRAINT \"FK_bc0c1999849aaadc75bc0512942\"");
    await queryRunner.query("ALTER TABLE \"sources\" DROP CONSTRAINT \"FK_38af0603d726413ffa787b6d85e\"");
    await queryRunner.query("DROP TABLE \"source_chunks\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_36e49273af72cc527c51162823\"");
    await queryRunner.query("DROP TABLE \"sources\"");
  }
}
