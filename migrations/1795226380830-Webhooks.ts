import { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1795226380830 implements MigrationInterface {
  name = 'Webhooks1795226380830';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"webhooks\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"url\" text NOT NULL, \"events\" text array NOT NULL, \"active\" boolean NOT NULL, \"disabled_reason\" text, \"secret_sealed\" text NOT NULL, \"consecutive_failures\" integer NOT NULL DEFAULT '0', \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_9e8795cfc899ab7bdaa831e8527\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_8bb81e5461acd8515c582883c8\" ON \"webhooks\"  (\"app_id\") ");
    await queryRunner.query("CREATE TABLE \"webhook_deliveries\" (\"id\" text NOT NULL, \"webhook_id\" text NOT NULL, \"message_id\" text NOT NULL, \"event\" text NOT NULL, \"payload\" text NOT NULL, \"status\" text NOT NULL, \"attempts\" integer NOT NULL DEFAULT '0', \"next_attempt_at\" TIMESTAMP WITH TIME ZONE, \"lease_until\" TIMESTAMP WITH TIME ZONE, \"response_status\" integer, \"error\" text, \"duration_ms\" integer, \"last_attempt_at\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_535dd409947fb6d8fc6dfc0112a\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_47a340074173ac16958ea6744d\" ON \"webhook_deliveries\"  (\"status\") ");
    await queryRunner.query("CREATE INDEX \"IDX_5e4a75e38b0ab1166b01691178\" ON \"webhook_deliveries\"  (\"next_attempt_at\") ");
    await queryRunner.query("CREATE INDEX \"IDX_85aefb7b9cff1da38cb31ad1e6\" ON \"webhook_deliveries\"  (\"webhook_id\", \"id\") ");
    await queryRunner.query("ALTER TABLE \"webhooks\" ADD CONSTRAINT \"FK_8bb81e5461acd8515c582883c8c\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"webhook_deliveries\" ADD CONSTRAINT \"FK_a0286aeb96db651efd1ae2966f2\" FOREIGN KEY (\"webhook_id\") REFERENCES \"webhooks\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"webhook_deliveries\" DROP CONSTRAINT \"FK_a0286aeb96db651efd1ae2966f2\"");
    await queryRunner.query("ALTER TABLE \"webhooks\" DROP CONSTRAINT \"FK_8bb81e5461acd8515c582883c8c\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_85aefb7b9cff1da38cb31ad1e6\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_5e4a75e38b0ab1166b01691178\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_47a340074173ac16958ea6744d\"");
    await queryRunner.query("DROP TABLE \"webhook_deliveries\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_8bb81e5461acd8515c582883c8\"");
    await queryRunner.query("DROP TABLE \"webhooks\"");
  }
}
