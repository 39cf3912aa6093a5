import { MigrationInterface, QueryRunner } from 'typeorm';

export class PreviewSourceFailure1795547165967 implements MigrationInterface {
  name = 'PreviewSourceFailure1795547165967';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"previews\" ADD \"failure_reason\" text");
    await queryRunner.query("ALTER TABLE \"previews\" ADD \"source_id\" text");
    await queryRunner.query("CREATE INDEX \"IDX_efee1f97ed54b01e9d4514dd7d\" ON \"previews\"  (\"source_id\") ");
    await queryRunner.query("ALTER TABLE \"previews\" ADD CONSTRAINT \"FK_efee1f97ed54b01e9d4514dd7d6\" FOREIGN KEY (\"source_id\") REFERENCES \"sources\"(\"id\") ON DELETE NO ACTION ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"previews\" DROP CONSTRAINT \"FK_efee1f97ed54b01e9d4514dd7d6\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_efee1f97ed54b01e9d4514dd7d\"");
    await queryRunner.query("ALTER TABLE \"previews\" DROP COLUMN \"source_id\"");
    await queryRunner.query("ALTER TABLE \"previews\" DROP COLUMN \"failure_reason\"");
  }
}
