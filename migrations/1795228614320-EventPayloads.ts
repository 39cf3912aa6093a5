import { MigrationInterface, QueryRunner } from 'typeorm';

export class EventPayloads1795228614320 implements MigrationInterface {
  name = 'EventPayloads1795228614320';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"event_payloads\" (\"id\" uuid NOT NULL, \"payload\" jsonb NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT \"PK_6fc34da3efd16920bb6adc7c386\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_6c0f32706229e61e01fb9464f4\" ON \"event_payloads\"  (\"created_at\") ");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("DROP INDEX \"public\".\"IDX_6c0f32706229e61e01fb9464f4\"");
    await queryRunner.query("DROP TABLE \"event_payloads\"");
  }
}
