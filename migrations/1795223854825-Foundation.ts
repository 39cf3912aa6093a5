import { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1795223854825 implements MigrationInterface {
  name = 'Foundation1795223854825';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"users\" (\"id\" text NOT NULL, \"email\" text NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"UQ_97672ac88f789774dd47f7c8be3\" UNIQUE (\"email\"), CONSTRAINT \"PK_a3ffb1c0c8416b9fc6f907b7433\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE TABLE \"api_tokens\" (\"id\" text NOT NULL, \"user_id\" text NOT NULL, \"name\" text NOT NULL, \"token_hash\" text NOT NULL, \"last_four\" text NOT NULL, \"expires_at\" TIMESTAMP WITH TIME ZONE, \"revoked_at\" TIMESTAMP WITH TIME ZONE, \"last_used_at\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"UQ_bbd687a104e1921e6702c6e3aad\" UNIQUE (\"token_hash\"), CONSTRAINT \"PK_c587455266b5fa8dace7194caac\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_b74883f5884a42fd8496d389b2\" ON \"api_tokens\"  (\"user_id\") ");
    await queryRunner.query("CREATE TABLE \"apps\" (\"id\" text NOT NULL, \"slug\" text NOT NULL, \"owner_id\" text NOT NULL, \"tier\" text NOT NULL DEFAULT 'free', \"current_deployment_id\" text, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"UQ_35eef0fb1f3f2b435b8b6d82ba0\" UNIQUE (\"slug\"), CONSTRAINT \"PK_c5121fda0f8268f1f7f84134e19\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_5cdb895992892c7c350812a2b5\" ON \"apps\"  (\"owner_id\") ");
    await queryRunner.query("CREATE TABLE \"deployments\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"status\" text NOT NULL, \"url\" text NOT NULL, \"env_sealed\" text, \"env_keys\" text array NOT NULL DEFAULT '{}', \"memory_mb\" integer NOT NULL, \"failure_reason\" text, \"created_by_id\" text NOT NULL, \"lease_until\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"updated_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"finished_at\" TIMESTAMP WITH TIME ZONE, CONSTRAINT \"PK_1e5627acb3c950deb83fe98fc48\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_38192398a94dfb55eb11527d01\" ON \"deployments\"  (\"status\") ");
    await queryRunner.query("CREATE INDEX \"IDX_69e73a9c53791f79987c962929\" ON \"deployments\"  (\"app_id\", \"id\") ");
    await queryRunner.query("CREATE TABLE \"log_lines\" (\"deployment_id\" text NOT NULL, \"seq\" integer NOT NULL, \"timestamp\" TIMESTAMP WITH TIME ZONE NOT NULL, \"type\" text NOT NULL, \"message\" text NOT NULL, CONSTRAINT \"PK_4e0600dee62d7c201a615423bd9\" PRIMARY KEY (\"deployment_id\", \"seq\"))");
    await queryRunner.query("CREATE TABLE \"collaborators\" (\"app_id\" text NOT NULL, \"user_id\" text NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_21fbaff7d01ec8feebe073d78c2\" PRIMARY KEY (\"app_id\", \"user_id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_8235bb5945c983c272fe5d14a2\" ON \"collaborators\"  (\"user_id\") ");
    await queryRunner.query("CREATE TABLE \"idempotency_keys\" (\"user_id\" text NOT NULL, \"key\" text NOT NULL, \"request_digest\" text NOT NULL, \"response\" jsonb NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_392b1af86f210d98d3f0c764728\" PRIMARY KEY (\"user_id\", \"key\"))");
    await queryRunner.query("ALTER TABLE \"api_tokens\" ADD CONSTRAINT \"FK_b74883f5884a42fd8496d389b25\" FOREIGN KEY (\"user_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"apps\" ADD CONSTRAINT \"FK_5cdb895992892c7c350812a2b5f\" FOREIGN KEY (\"owner_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD CONSTRAINT \"FK_46da92793ea5b8442c703bcfbaf\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"log_lines\" ADD CONSTRAINT \"FK_8359a62445d244dc9dd135ccfa9\" FOREIGN KEY (\"deployment_id\") REFERENCES \"deployments\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"collaborators\" ADD CONSTRAINT \"FK_2b4bf74226c0943ed79474aea49\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"collaborators\" ADD CONSTRAINT \"FK_8235bb5945c983c272fe5d14a24\" FOREIGN KEY (\"user_id\") REFERENCES \"users\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"collaborators\" DROP CONSTRAINT \"FK_8235bb5945c983c272fe5d14a24\"");
    await queryRunner.query("ALTER TABLE \"collaborators\" DROP CONSTRAINT \"FK_2b4bf74226c0943ed79474aea49\"");
    await queryRunner.query("ALTER TABLE \"log_lines\" DROP CONSTRAINT \"FK_8359a62445d244dc9dd135ccfa9\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP CONSTRAINT \"FK_46da92793ea5b8442c703bcfbaf\"");
    await queryRunner.query("ALTER TABLE \"apps\" DROP CONSTRAINT \"FK_5cdb895992892c7c350812a2b5f\"");
    await queryRunner.query("ALTER TABLE \"api_tokens\" DROP CONSTRAINT \"FK_b74883f5884a42fd8496d389b25\"");
    await queryRunner.query("DROP TABLE \"idempotency_keys\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_8235bb5945c983c272fe5d14a2\"");
    await queryRunner.query("DROP TABLE \"collaborators\"");
    await queryRunner.query("DROP TABLE \"log_lines\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_69e73a9c53791f79987c962929\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_38192398a94dfb55eb11527d01\"");
    await queryRunner.query("DROP TABLE \"deployments\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_5cdb895992892c7c350812a2b5\"");
    await queryRunner.query("DROP TABLE \"apps\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_b74883f5884a42fd8496d389b2\"");
    await queryRunner.query("DROP TABLE \"api_tokens\"");
    await queryRunner.query("DROP TABLE \"users\"");
  }
}
