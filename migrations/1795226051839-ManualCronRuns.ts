import { MigrationInterface, QueryRunner } from 'typeorm';

export class ManualCronRuns1795226051839 implements MigrationInterface {
  name = 'ManualCronRuns1795226051839';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"cron_runs\" DROP CONSTRAINT \"UQ_8f82e0a0001886922109b76fc51\"");
    await queryRunner.query("CREATE UNIQUE INDEX \"IDX_1357f10d0ff1383f000bf9992f\" ON \"cron_runs\"  (\"cron_id\", \"scheduled_at\") WHERE NOT manual");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("DROP INDEX \"public\".\"IDX_1357f10d0ff1383f000bf9992f\"");
    await queryRunner.query("ALTER TABLE \"cron_runs\" ADD CONSTRAINT \"UQ_8f82e0a0001886922109b76fc51\" UNIQUE (\"cron_id\", \"scheduled_at\")");
  }
}
