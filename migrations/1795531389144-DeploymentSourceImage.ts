import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a deployment builds or runs: an uploaded source (`source_id`; a source a deployment
 * references cannot be removed) or an image reference. Existing deployments have neither.
 */
export class DeploymentSourceImage1795531389144 implements MigrationInterface {
  name = 'DeploymentSourceImage1795531389144';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"source_id\" text");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"image\" text");
    await queryRunner.query("CREATE INDEX \"IDX_d0674878dbc439ba306817a650\" ON \"deployments\"  (\"source_id\") ");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD CONSTRAINT \"FK_d0674878dbc439ba306817a650a\" FOREIGN KEY (\"source_id\") REFERENCES \"sources\"(\"id\") ON DELETE NO ACTION ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" DROP CONSTRAINT \"FK_d0674878dbc439ba306817a650a\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_d0674878dbc439ba306817a650\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"image\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"source_id\"");
  }
}
