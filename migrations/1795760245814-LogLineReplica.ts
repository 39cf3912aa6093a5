import { MigrationInterface, QueryRunner } from 'typeorm';

export class LogLineReplica1795760245814 implements MigrationInterface {
  name = 'LogLineReplica1795760245814';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"log_lines\" ADD \"replica\" smallint");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"log_lines\" DROP COLUMN \"replica\"");
  }
}
