import { MigrationInterface, QueryRunner } from 'typeorm';

export class Replicas1795547809849 implements MigrationInterface {
  name = 'Replicas1795547809849';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" ADD \"replicas\" integer");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"replicas\" integer NOT NULL DEFAULT '1'");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"replicas\"");
    await queryRunner.query("ALTER TABLE \"apps\" DROP COLUMN \"replicas\"");
  }
}
