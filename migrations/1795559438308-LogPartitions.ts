import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * log_lines becomes a table partitioned by the day a line is stored (UTC), a partition a day, so
 * retention drops whole partitions instead of deleting rows (log-retention.ts). The lines stored
 * so far go into one partition for everything before today; the gateway creates the daily ones
 * ahead of time (LogRetention.ensurePartitions), and this migration makes today's and the next
 * week's. The primary key must hold the partition key: (deployment_id, seq, day).
 */
export class LogPartitions1795559438308 implements MigrationInterface {
  name = 'LogPartitions1795559438308';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "log_lines" RENAME TO "log_lines_unpartitioned"');
    await queryRunner.query('ALTER TABLE "log_lines_unpartitioned" RENAME CONSTRAINT "PK_4e0600dee62d7c201a615423bd9" TO "log_lines_unpartitioned_pkey"');
    await queryRunner.query('ALTER TABLE "log_lines_unpartitioned" DROP CONSTRAINT "FK_8359a62445d244dc9dd135ccfa9"');
    await queryRunner.query('DROP INDEX "public"."log_lines_app_time"');
    await queryRunner.query('DROP INDEX "public"."log_lines_message_trgm"');
    await queryRunner.query(
      `CREATE TABLE "log_lines" (
         "deployment_id" text NOT NULL,
         "seq" integer NOT NULL,
         "day" date NOT NULL DEFAULT ((now() AT TIME ZONE 'UTC'::text))::date,
         "app_id" text NOT NULL,
         "timestamp" TIMESTAMP WITH TIME ZONE NOT NULL,
         "type" text NOT NULL,
         "message" text NOT NULL,
         "stream" text,
         CONSTRAINT "PK_a62b22db85ca97a9cd1534387fc" PRIMARY KEY ("deployment_id", "seq", "day")
       ) PARTITION BY RANGE ("day")`,
    );
    const [{ today }] = (await queryRunner.query(`SELECT ((now() AT TIME ZONE 'UTC'))::date::text AS today`)) as Array<{ today: string }>;
    const name = (day: string) => `log_lines_d${day.replace(/-/g, '')}`;
    await queryRunner.query(`CREATE TABLE "log_lines_before_${today.replace(/-/g, '')}" PARTITION OF "log_lines" FOR VALUES FROM (MINVALUE) TO ('${today}')`);
    for (let i = 0; i <= 7; i++) {
      const [{ day, next }] = (await queryRunner.query(`SELECT ($1::date + $2::int)::text AS day, ($1::date + $2::int + 1)::text AS next`, [today, i])) as Array<{
        day: string;
        next: string;
      }>;
      await queryRunner.query(`CREATE TABLE "${name(day)}" PARTITION OF "log_lines" FOR VALUES FROM ('${day}') TO ('${next}')`);
    }
    await queryRunner.query(
      `INSERT INTO "log_lines" ("deployment_id", "seq", "day", "app_id", "timestamp", "type", "message", "stream")
       SELECT "deployment_id", "seq", ($1::date - 1), "app_id", "timestamp", "type", "message", "stream" FROM "log_lines_unpartitioned"`,
      [today],
    );
    await queryRunner.query('DROP TABLE "log_lines_unpartitioned"');
    await queryRunner.query(
      'ALTER TABLE "log_lines" ADD CONSTRAINT "FK_8359a62445d244dc9dd135ccfa9" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE NO ACTION',
    );
    await queryRunner.query('CREATE INDEX "log_lines_app_time" ON "log_lines" ("app_id", "timestamp", "deployment_id", "seq")');
    await queryRunner.query('CREATE INDEX "log_lines_message_trgm" ON "log_lines" USING gin ("message" gin_trgm_ops)');
    // The newest seq retention removed from a deployment's log (its writer goes on after it).
    await queryRunner.query('ALTER TABLE "deployments" ADD "logs_removed_seq" integer');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "deployments" DROP COLUMN "logs_removed_seq"');
    await queryRunner.query('ALTER TABLE "log_lines" RENAME TO "log_lines_partitioned"');
    await queryRunner.query('ALTER TABLE "log_lines_partitioned" RENAME CONSTRAINT "PK_a62b22db85ca97a9cd1534387fc" TO "log_lines_partitioned_pkey"');
    await queryRunner.query('ALTER TABLE "log_lines_partitioned" DROP CONSTRAINT "FK_8359a62445d244dc9dd135ccfa9"');
    await queryRunner.query('DROP INDEX "public"."log_lines_app_time"');
    await queryRunner.query('DROP INDEX "public"."log_lines_message_trgm"');
    await queryRunner.query(
      `CREATE TABLE "log_lines" ("deployment_id" text NOT NULL, "seq" integer NOT NULL, "timestamp" TIMESTAMP WITH TIME ZONE NOT NULL, "type" text NOT NULL,
         "message" text NOT NULL, "app_id" text NOT NULL, "stream" text, CONSTRAINT "PK_4e0600dee62d7c201a615423bd9" PRIMARY KEY ("deployment_id", "seq"))`,
    );
    await queryRunner.query(
      `INSERT INTO "log_lines" ("deployment_id", "seq", "timestamp", "type", "message", "app_id", "stream")
       SELECT DISTINCT ON ("deployment_id", "seq") "deployment_id", "seq", "timestamp", "type", "message", "app_id", "stream" FROM "log_lines_partitioned"`,
    );
    await queryRunner.query('DROP TABLE "log_lines_partitioned"');
    await queryRunner.query(
      'ALTER TABLE "log_lines" ADD CONSTRAINT "FK_8359a62445d244dc9dd135ccfa9" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE NO ACTION',
    );
    await queryRunner.query('CREATE INDEX "log_lines_app_time" ON "log_lines" ("app_id", "timestamp", "deployment_id", "seq")');
    await queryRunner.query('CREATE INDEX "log_lines_message_trgm" ON "log_lines" USING gin ("message" gin_trgm_ops)');
  }
}
