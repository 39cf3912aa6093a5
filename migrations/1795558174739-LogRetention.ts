import { MigrationInterface, QueryRunner } from 'typeorm';

export class LogRetention1795558174739 implements MigrationInterface {
  name = 'LogRetention1795558174739';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"logs_removed_before\" TIMESTAMP WITH TIME ZONE");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"logs_removed_before\"");
  }
}
