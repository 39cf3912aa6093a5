import { MigrationInterface, QueryRunner } from 'typeorm';

export class Previews1795225000731 implements MigrationInterface {
  name = 'Previews1795225000731';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"previews\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"pr_number\" integer NOT NULL, \"slug\" text NOT NULL, \"url\" text NOT NULL, \"status\" text NOT NULL, \"generation\" integer NOT NULL DEFAULT '1', \"lease_until\" TIMESTAMP WITH TIME ZONE, \"expires_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"updated_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"UQ_5b3e806ba962b7fbba065e9ec4d\" UNIQUE (\"app_id\", \"pr_number\"), CONSTRAINT \"PK_dd96862c6ebf6555003e5d8ef51\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_246b04b3f0c3c4124bb9f4e8fc\" ON \"previews\"  (\"app_id\") ");
    await queryRunner.query("CREATE INDEX \"IDX_c5ef49bbf60e3b09600a9704a6\" ON \"previews\"  (\"expires_at\") ");
    await queryRunner.query("CREATE TABLE \"preview_resources\" (\"id\" text NOT NULL, \"preview_id\" text NOT NULL, \"kind\" text NOT NULL, \"name\" text NOT NULL, \"external_id\" text NOT NULL, CONSTRAINT \"PK_766d1db6806b5d78d29194e1de6\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_8c8fcb6641ab8d559c59c5dacf\" ON \"preview_resources\"  (\"preview_id\") ");
    await queryRunner.query("ALTER TABLE \"previews\" ADD CONSTRAINT \"FK_246b04b3f0c3c4124bb9f4e8fce\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"preview_resources\" ADD CONSTRAINT \"FK_8c8fcb6641ab8d559c59c5dacf4\" FOREIGN KEY (\"preview_id\") REFERENCES \"previews\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"preview_resources\" DROP CONSTRAINT \"FK_8c8fcb6641ab8d559c59c5dacf4\"");
    await queryRunner.query("ALTER TABLE \"previews\" DROP CONSTRAINT \"FK_246b04b3f0c3c4124bb9f4e8fce\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_8c8fcb6641ab8d559c59c5dacf\"");
    await queryRunner.query("DROP TABLE \"preview_resources\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_c5ef49bbf60e3b09600a9704a6\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_246b04b3f0c3c4124bb9f4e8fc\"");
    await queryRunner.query("DROP TABLE \"previews\"");
  }
}
