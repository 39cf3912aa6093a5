import { MigrationInterface, QueryRunner } from 'typeorm';

export class Crons1795225682120 implements MigrationInterface {
  name = 'Crons1795225682120';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"crons\" (\"id\" text NOT NULL, \"app_id\" text NOT NULL, \"schedule\" text NOT NULL, \"command\" text NOT NULL, \"enabled\" boolean NOT NULL, \"next_run_at\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"updated_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_0a3a407561dafdd999890735675\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_eca756702d33439af8cdec648d\" ON \"crons\"  (\"app_id\") ");
    await queryRunner.query("CREATE INDEX \"IDX_a8ed15e2cfeceb86eea61f7dc3\" ON \"crons\"  (\"next_run_at\") ");
    await queryRunner.query("CREATE TABLE \"cron_runs\" (\"id\" text NOT NULL, \"cron_id\" text NOT NULL, \"status\" text NOT NULL, \"exit_code\" integer, \"scheduled_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"started_at\" TIMESTAMP WITH TIME ZONE, \"finished_at\" TIMESTAMP WITH TIME ZONE, \"manual\" boolean NOT NULL DEFAULT false, CONSTRAINT \"UQ_8f82e0a0001886922109b76fc51\" UNIQUE (\"cron_id\", \"scheduled_at\"), CONSTRAINT \"PK_43e18ce1778dc9b20a137b84fd5\" PRIMARY KEY (\"id\"))");
    await queryRunner.query("CREATE INDEX \"IDX_3cc5b71802d88b1ccaed311335\" ON \"cron_runs\"  (\"cron_id\", \"id\") ");
    await queryRunner.query("ALTER TABLE \"crons\" ADD CONSTRAINT \"FK_eca756702d33439af8cdec648df\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
    await queryRunner.query("ALTER TABLE \"cron_runs\" ADD CONSTRAINT \"FK_422cecc507ee93333b4815cd182\" FOREIGN KEY (\"cron_id\") REFERENCES \"crons\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"cron_runs\" DROP CONSTRAINT \"FK_422cecc507ee93333b4815cd182\"");
    await queryRunner.query("ALTER TABLE \"crons\" DROP CONSTRAINT \"FK_eca756702d33439af8cdec648df\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_3cc5b71802d88b1ccaed311335\"");
    await queryRunner.query("DROP TABLE \"cron_runs\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_a8ed15e2cfeceb86eea61f7dc3\"");
    await queryRunner.query("DROP INDEX \"public\".\"IDX_eca756702d33439af8cdec648d\"");
    await queryRunner.query("DROP TABLE \"crons\"");
  }
}
