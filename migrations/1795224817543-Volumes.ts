import { MigrationInterface, QueryRunner } from 'typeorm';

export class Volumes1795224817543 implements MigrationInterface {
  name = 'Volumes1795224817543';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("CREATE TABLE \"volumes\" (\"app_id\" text NOT NULL, \"size_mb\" integer NOT NULL, \"status\" text NOT NULL, \"erase_at\" TIMESTAMP WITH TIME ZONE, \"created_at\" TIMESTAMP WITH TIME ZONE NOT NULL, \"updated_at\" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT \"PK_c4719ff0bea45860d403fb3a5a6\" PRIMARY KEY (\"app_id\"))");
    await queryRunner.query("CREATE TABLE \"sim_volume_usage\" (\"slug\" text NOT NULL, \"used_mb\" integer NOT NULL, CONSTRAINT \"PK_0a3b320636e64a6d4343172b966\" PRIMARY KEY (\"slug\"))");
    await queryRunner.query("ALTER TABLE \"deployments\" ADD \"volume_mb\" integer");
    await queryRunner.query("ALTER TABLE \"volumes\" ADD CONSTRAINT \"FK_c4719ff0bea45860d403fb3a5a6\" FOREIGN KEY (\"app_id\") REFERENCES \"apps\"(\"id\") ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("ALTER TABLE \"volumes\" DROP CONSTRAINT \"FK_c4719ff0bea45860d403fb3a5a6\"");
    await queryRunner.query("ALTER TABLE \"deployments\" DROP COLUMN \"volume_mb\"");
    await queryRunner.query("DROP TABLE \"sim_volume_usage\"");
    await queryRunner.query("DROP TABLE \"volumes\"");
  }
}
