import { MigrationInterface, QueryRunner } from 'typeorm';

export class RunnerLease1795228617037 implements MigrationInterface {
  name = 'RunnerLease1795228617037';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" ADD \"runner_id\" text");
    await queryRunner.query("ALTER TABLE \"apps\" ADD \"runner_lease_until\" TIMESTAMP WITH TIME ZONE");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" DROP COLUMN \"runner_lease_until\"");
    await queryRunner.query("ALTER TABLE \"apps\" DROP COLUMN \"runner_id\"");
  }
}
