import { MigrationInterface, QueryRunner } from 'typeorm';

export class DeploymentSleep1795534642929 implements MigrationInterface {
  name = 'DeploymentSleep1795534642929';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"slept_at\" TIMESTAMP WITH TIME ZONE");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"last_request_at\" TIMESTAMP WITH TIME ZONE");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"last_request_at\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"slept_at\"");
  }
}
