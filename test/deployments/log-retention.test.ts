import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import { DeploymentLogStreamDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { LogRetention } from '../../src/modules/deployments/log-retention';
import { LogWriter } from '../../src/modules/deployments/log-writer';
import { createPubSub } from '../../src/bus/pubsub';
import { systemClock } from '../../src/clock';
import { collect, gqlOk, rest, startGateway, TestGateway, waitForItem, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, TestUser } from '../support/factories';
import { untilListening } from './helpers';

const REMOVED: TypedDocumentNode<{ deployment: { logsRemovedBefore: string | null } }, { id: string }> = parse(`
  query Removed($id: ID!) { deployment(id: $id) { logsRemovedBefore } }
`);

const DAY = 86_400_000;
const today = () => Math.floor(Date.now() / DAY) * DAY;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * log_lines is partitioned by the day a line is stored; retention drops whole partitions. A clock
 * some days ahead stands in for the days passing: lines stored today are then that old.
 */
describe('log retention by daily partitions (HATCHERY_LOG_RETENTION_DAYS, the logs-retention job)', () => {
  let t: TestGateway;
  let owner: TestUser;
  let id: string;
  let other: string;
  const later = (days: number) => ({ now: () => new Date(Date.now() + days * DAY) });

  /** Lines stored straight into the table, into the partition of `dayOffset` days from today. */
  const storeOn = (deploymentId: string, count: number, dayOffset: number, text: string) =>
    t.gateway.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, day, timestamp, type, message)
       SELECT $1, d.app_id, (SELECT COALESCE(max(seq), 0) FROM log_lines WHERE deployment_id = $1) + i, $2::date, now() + i * interval '1 ms', 'runtime', $3 || ' ' || i
         FROM deployments d, generate_series(1, $4::int) AS i WHERE d.id = $1`,
      [deploymentId, isoDay(today() + dayOffset * DAY), text, count],
    );
  const partitionNames = async () => (await t.gateway.services.deployments.retention.partitions()).map((p) => p.name);
  const count = async (deploymentId: string, like: string) =>
    (await t.gateway.ds.query(`SELECT count(*)::int AS n FROM log_lines WHERE deployment_id = $1 AND message LIKE $2`, [deploymentId, like]))[0].n as number;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_LOG_RETENTION_DAYS: '30' });
    owner = await makeUser(t.gateway);
    other = (await deploy(t.url, owner, (await makeApp(t.url, owner)).slug)).id;
    id = (await deploy(t.url, owner, (await makeApp(t.url, owner)).slug)).id;
    await untilListening(t.url, owner, id);
    await untilListening(t.url, owner, other);
  });
  afterAll(() => t.stop());

  it('the gateway makes a partition a day ahead of time; lines are stored in today’s', async () => {
    const names = await partitionNames();
    for (let i = 0; i < 8; i++) expect(names).toContain(`log_lines_d${isoDay(today() + i * DAY).replace(/-/g, '')}`);
    const [{ day }] = await t.gateway.ds.query(`SELECT max(day)::text AS day FROM log_lines WHERE deployment_id = $1`, [id]);
    expect(day).toBe(isoDay(today()));
  });

  it('drops every partition whose days are past the retention, whole; keeps the rest; a second run drops nothing', async () => {
    await storeOn(id, 12_000, 0, 'old');
    await storeOn(id, 3, 6, 'recent');
    await storeOn(other, 2, 1, 'old');
    const [{ due }] = await t.gateway.ds.query(`SELECT count(*)::int AS due FROM log_lines WHERE day < $1::date`, [isoDay(today() + 5 * DAY)]);
    expect(due).toBeGreaterThan(12_000);
    // 35 days from now, lines stored on the first 5 of these days are past 30 days.
    const retention = new LogRetention(t.gateway.ds, later(35), 30);
    const before = await partitionNames();
    const removed = await retention.run();
    const after = await partitionNames();
    expect(after).not.toContain(`log_lines_d${isoDay(today()).replace(/-/g, '')}`);
    expect(after).not.toContain(`log_lines_d${isoDay(today() + 4 * DAY).replace(/-/g, '')}`);
    expect(after).toContain(`log_lines_d${isoDay(today() + 5 * DAY).replace(/-/g, '')}`);
    expect(before.filter((p) => !after.includes(p)).length).toBeGreaterThanOrEqual(5);
    expect(await count(id, '%')).toBe(3);
    expect(await count(id, 'recent %')).toBe(3);
    expect(await count(other, '%')).toBe(0);
    expect(removed).toBe(due);
    expect(await retention.run()).toBe(0);
  });

  it('a log whose every line went numbers on after them, also for a writer starting over from storage', async () => {
    expect(await count(other, '%')).toBe(0);
    const [{ removedSeq }] = await t.gateway.ds.query(`SELECT logs_removed_seq AS "removedSeq" FROM deployments WHERE id = $1`, [other]);
    expect(removedSeq).toBeGreaterThan(2);
    // As a gateway restarting would: a new writer continues the sequence from the database.
    // (Today's partition went with the clock 35 days ahead: the writer makes it again.)
    const writer = new LogWriter(t.gateway.ds, createPubSub(), systemClock, {
      ensurePartitions: () => t.gateway.services.deployments.retention.ensurePartitions(),
      onError: (err) => {
        throw err;
      },
    });
    await writer.open(other);
    writer.append(other, LogType.RUNTIME, 'numbered on');
    await writer.flush();
    const [line] = await t.gateway.ds.query(`SELECT seq FROM log_lines WHERE deployment_id = $1 AND message = 'numbered on'`, [other]);
    expect(line.seq).toBe(removedSeq + 1);
  });

  it('the logs then start at the oldest line kept and say so: REST header, GraphQL field; a stream replays from there', async () => {
    const res = await rest(t.url, owner.token, 'GET', `/deployments/${id}/logs?limit=1`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((l: { message: string }) => l.message)).toEqual(['recent 1']);
    const removedBefore = res.headers.get('hatchery-logs-removed-before');
    // Its lines were stored today: those stored before tomorrow (UTC midnight) are gone.
    expect(removedBefore).toBe(new Date(today() + DAY).toISOString());
    const { deployment } = await gqlOk(t.url, owner.token, REMOVED, { id });
    expect(deployment.logsRemovedBefore).toBe(removedBefore);

    const client = wsClient(t.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id });
      const items = await waitForItem(stream, (i) => i.deploymentLogs.message === 'recent 3');
      expect(items.map((i) => i.deploymentLogs.message)).toEqual(['recent 1', 'recent 2', 'recent 3']);
      stream.unsubscribe();
    } finally {
      await client.dispose();
    }
    // A deployment that lost nothing says nothing.
    const fresh = await deploy(t.url, owner, (await makeApp(t.url, owner)).slug);
    const clean = await rest(t.url, owner.token, 'GET', `/deployments/${fresh.id}/logs`);
    expect(clean.headers.get('hatchery-logs-removed-before')).toBeNull();
  });

  it('writes go on while a partition is dropped, and 0 days keeps everything', async () => {
    await storeOn(id, 6000, 5, 'doomed');
    const writes = (async () => {
      for (let i = 0; i < 20; i++) await storeOn(id, 10, 7, `during ${i}`);
    })();
    // 36 days ahead: day 5 is past 30 days, days 6 and 7 are not.
    const dropped = new LogRetention(t.gateway.ds, later(36), 30).run();
    await Promise.all([writes, dropped]);
    expect(await count(id, 'doomed %')).toBe(0);
    expect(await count(id, 'during %')).toBe(200);
    expect(await new LogRetention(t.gateway.ds, later(400), 0).run()).toBe(0);
    expect(await count(id, 'during %')).toBe(200);
  });

  it('a writer that finds no partition for today makes one and stores its lines', async () => {
    const name = `log_lines_d${isoDay(today()).replace(/-/g, '')}`;
    const writer = t.gateway.services.deployments.writer;
    await t.gateway.services.deployments.retention.ensurePartitions();
    expect(await partitionNames()).toContain(name);
    await writer.flush();
    await t.gateway.ds.query(`ALTER TABLE log_lines DETACH PARTITION "${name}"`);
    await t.gateway.ds.query(`DROP TABLE "${name}"`);
    await writer.open(other);
    writer.append(other, LogType.RUNTIME, 'after the partition was gone');
    await writer.flush();
    expect(await count(other, 'after the partition was gone')).toBe(1);
    expect(await partitionNames()).toContain(name);
  });
});
