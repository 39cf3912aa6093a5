import { MigrationInterface, QueryRunner } from 'typeorm';

export class EnergyAndBilling1795225515786 implements MigrationInterface {
  name = 'EnergyAndBilling1795225515786';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"checkout_sessions\" (\"id\" text NOT NULL, \"user_id\" text NOT NULL, \"provider\" text NOT NULL, \"provider_session_id\" text NOT NULL, \"url\" text NOT NULL, \"status\" text NOT NULL, \"expires_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"paid_at\" TIMESTAMP WITH TIME ZONE, CONSTRAINT \"UQ_c022daec871ba4b52b1c725f6be\" UNIQUE (\"provider_session_id\"), CONSTRAINT \"PK_5730b2bbc190203a94941d82bd1\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_0fcf7372ed8c867428d29dfab5\" ON \"checkout_sessions\"  (\"user_id\") ");
    await queryRunner.query("CREATE TABLE \"pack_fulfilments\" (\"provider_session_id\" text NOT NULL, \"checkout_id\" text NOT NULL, \"user_id\" text NOT NULL, \"credited_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_0a814a0653af59b22ce79afb47a\" PRIMARY KEY (\"provider_session_id\"))");
    await queryRunner.query("CREATE TABLE \"energy_accounts\" (\"user_id\" text NOT NULL, \"daily\" integer NOT NULL, \"weekly\" integer NOT NULL, \"bonus\" integer NOT NULL, \"pack\" integer NOT NULL, \"daily_reset_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"weekly_reset_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_060e3bf1050aa7079265320aea8\" PRIMARY KEY (\"user_id\"))");
    await queryRunner.query("CREATE TABLE \"energy_ledger\" (\"id\" text NOT NULL, \"user_id\" text NOT NULL, \"bucket\" text NOT NULL, \"delta\" integer NOT NULL, \"balance_after\" integer NOT NULL, \"reason\" text NOT NULL, \"ref\" text, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_b8c2ee8be70d2d35fa8b9ab7f3d\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_e75c6820d661024efd602407ca\" ON \"energy_ledger\"  (\"user_id\", \"id\") ");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"metered_until\" TIMESTAMP WITH TIME ZONE");
    await queryRunner.query("ALTER TABLE \"checkout_sessions\" ADD CONSTRAINT \"FK_0fcf7372ed8c867428d29dfab53\" FOREIGN KEY (\"user_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"energy_accounts\" ADD CONSTRAINT \"FK_060e3bf1050aa7079265320aea8\" FOREIGN KEY (\"user_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"energy_ledger\" ADD CONSTRAINT \"FK_3d7ed48b1dc96fcc7919af0b93b\" FOREIGN KEY (\"user_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"energy_ledger\" DROP CONSTRAINT \"FK_3d7ed48b1dc96fcc7919af0b93b\"");
    await queryRunner.query("ALTER TABLE \"energy_accounts\" DROP CONSTRAINT \"FK_060e3bf1050aa7079265320aea8\"");
    await queryRunner.query("ALTER TABLE \"checkout_sessions\" DROP CONSTRAINT \"FK_0fcf7372ed8c867428d29dfab53\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"metered_until\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_e75c6820d661024efd602407ca\"");
    await queryRunner.query("DROP TABLE \"energy_ledger\"");
    await queryRunner.query("DROP TABLE \"energy_accounts\"");
    await queryRunner.query("DROP TABLE \"pack_fulfilments\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_0fcf7372ed8c867428d29dfab5\"");
    await queryRunner.query("DROP TABLE \"checkout_sessions\"");
  }
}
