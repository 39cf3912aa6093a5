import { MigrationInterface, QueryRunner } from 'typeorm';

export class AppMemoryOverride1795224723572 implements MigrationInterface {
  name = 'AppMemoryOverride1795224723572';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" ADD \"memory_mb\" integer");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"apps\" DROP COLUMN \"memory_mb\"");
  }
}
