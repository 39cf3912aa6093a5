import { MigrationInterface, QueryRunner } from 'typeorm';

export class LogDrains1795557105803 implements MigrationInterface {
  name = 'LogDrains1795557105803';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"log_drains\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"url\" text NOT NULL, \"format\" text NOT NULL, \"status\" text NOT NULL, \"disabled_reason\" text, \"last_error\" text, \"last_delivered_at\" TIMESTAMP WITH TIME ZONE, \"secret_sealed\" text, \"consecutive_failures\" integer NOT NULL DEFAULT '0', \"retry_at\" TIMESTAMP WITH TIME ZONE, \"lease_holder\" text, \"lease_until\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_843cd223afca3503583a4bb0837\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_1906a5a1a07bf102c8b0785281\" ON \"log_drains\"  (\"app_id\") ");
    await queryRunner.query("CREATE TABLE \"log_drain_cursors\" (\"drain_id\" text NOT NULL, \"deployment_id\" text NOT NULL, \"acked_seq\" integer NOT NULL, CONSTRAINT \"PK_b9e18ced53a02a466cd86ac3154\" PRIMARY KEY (\"drain_id\", \"deployment_id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_b5405a72e0477045c7e8f17a9e\" ON \"log_drain_cursors\"  (\"deployment_id\") ");
    await queryRunner.query("ALTER TABLE \"log_drains\" ADD CONSTRAINT \"FK_1906a5a1a07bf102c8b07852819\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"log_drain_cursors\" ADD CONSTRAINT \"FK_9a2fd844c66a3877375625b12b2\" FOREIGN KEY (\"drain_id\") REFERENCES \"log_drains\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"log_drain_cursors\" ADD CONSTRAINT \"FK_b5405a72e0477045c7e8f17a9e0\" FOREIGN KEY (\"deployment_id\") REFERENCES \"deployments\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"log_drain_cursors\" DROP CONSTRAINT \"FK_b5405a72e0477045c7e8f17a9e0\"");
    await queryRunner.query("ALTER TABLE \"log_drain_cursors\" DROP CONSTRAINT \"FK_9a2fd844c66a3877375625b12b2\"");
    await queryRunner.query("ALTER TABLE \"log_drains\" DROP CONSTRAINT \"FK_1906a5a1a07bf102c8b07852819\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_b5405a72e0477045c7e8f17a9e\"");
    await queryRunner.query("DROP TABLE \"log_drain_cursors\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_1906a5a1a07bf102c8b0785281\"");
    await queryRunner.query("DROP TABLE \"log_drains\"");
  }
}
