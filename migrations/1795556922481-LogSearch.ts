import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Log search (issue 16): the output stream of a line, its egg (so an egg's logs read in time order
 * through one index) and a trigram index on the text, so `q` stays fast on big logs. pg_trgm is a
 * trusted extension (PostgreSQL 13+): the database owner may create it without superuser.
 */
export class LogSearch1795556922481 implements MigrationInterface {
  name = 'LogSearch1795556922481';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "log_lines" ADD "stream" text');
    await queryRunner.query('ALTER TABLE "log_lines" ADD "app_id" text');
    await queryRunner.query('UPDATE "log_lines" l SET "app_id" = d."app_id" FROM "deployments" d WHERE d."id" = l."deployment_id"');
    await queryRunner.query('ALTER TABLE "log_lines" ALTER COLUMN "app_id" SET NOT NULL');
    await queryRunner.query('CREATE INDEX "log_lines_app_time" ON "log_lines" ("app_id", "timestamp", "deployment_id", "seq")');
    await queryRunner.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await queryRunner.query('CREATE INDEX "log_lines_message_trgm" ON "log_lines" USING gin ("message" gin_trgm_ops)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."log_lines_message_trgm"');
    await queryRunner.query('DROP INDEX "public"."log_lines_app_time"');
    await queryRunner.query('ALTER TABLE "log_lines" DROP COLUMN "app_id"');
    await queryRunner.query('ALTER TABLE "log_lines" DROP COLUMN "stream"');
  }
}
