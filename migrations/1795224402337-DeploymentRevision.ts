import { MigrationInterface, QueryRunner } from 'typeorm';

export class DeploymentRevision1795224402337 implements MigrationInterface {
  name = 'DeploymentRevision1795224402337';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"revision\" integer NOT NULL DEFAULT '1'");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"revision\"");
  }
}
