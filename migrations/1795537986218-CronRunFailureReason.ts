import { MigrationInterface, QueryRunner } from 'typeorm';

export class CronRunFailureReason1795537986218 implements MigrationInterface {
  name = 'CronRunFailureReason1795537986218';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"cron_runs\" ADD \"failure_reason\" text");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"cron_runs\" DROP COLUMN \"failure_reason\"");
  }
}
