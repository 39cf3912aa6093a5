import { DeploymentLogStreamDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, rest, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle, TestUser } from '../support/factories';

/**
 * The log writer stores each batch with one plain insert; when that cannot be done (a line of the
 * batch is stored already, as after taking over from another writer; a deployment of the batch is
 * gone) it stores what it can, line by line, and publishes exactly what it stored.
 */
describe('log writer batches that cannot be stored whole', () => {
  let t: TestGateway;
  let owner: TestUser;
  let slug: string;

  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SIM_BUILD_MS: '100' });
    owner = await makeUser(t.gateway);
    slug = (await makeApp(t.url, owner)).slug;
  });
  afterAll(() => t.stop());

  const failed = async () => {
    const d = await deploy(t.url, owner, slug, { HATCHERY_SIMULATE: 'fail' });
    expect(await settle(t.url, owner, d.id)).toBe('FAILED');
    return d.id;
  };
  const stored = async (id: string): Promise<Array<{ seq: number; message: string }>> =>
    t.gateway.ds.query('SELECT seq, message FROM log_lines WHERE deployment_id = $1 ORDER BY seq', [id]);

  it('a seq stored meanwhile by another writer is kept as it is; the rest of the batch is stored and streamed', async () => {
    const id = await failed();
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);
    const before = (await stored(id)).length;
    // Another writer got there first with the next seq.
    await t.gateway.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message) VALUES ($1, (SELECT app_id FROM deployments WHERE id = $1), $2, now(), 'runtime', 'theirs')`,
      [id, before + 1],
    );

    const client = wsClient(t.url, owner.token);
    try {
      const stream = collect(client, DeploymentLogStreamDocument, { id });
      await stream.waitFor(before + 1);
      writer.append(id, LogType.RUNTIME, 'mine, too late');
      writer.append(id, LogType.RUNTIME, 'mine, next');
      await writer.flush();
      const items = await stream.waitFor(before + 2);
      expect(items.slice(before).map((i) => [i.deploymentLogs.seq, i.deploymentLogs.message])).toEqual([
        [before + 1, 'theirs'],
        [before + 2, 'mine, next'],
      ]);
      expect((await stored(id)).slice(before)).toEqual([
        { seq: before + 1, message: 'theirs' },
        { seq: before + 2, message: 'mine, next' },
      ]);
    } finally {
      await client.dispose();
    }
  });

  it('stores which output and which replica a line of the egg’s came from, on either path; none for the platform’s lines', async () => {
    const id = await failed();
    const writer = t.gateway.services.deployments.writer;
    await writer.open(id);
    const origin = async (): Promise<Array<{ message: string; stream: string | null; replica: number | null }>> =>
      t.gateway.ds.query(`SELECT message, stream, replica FROM log_lines WHERE deployment_id = $1 AND message LIKE 'origin %' ORDER BY seq`, [id]);
    writer.append(id, LogType.RUNTIME, 'origin 1', new Date(), 'stdout', 1);
    writer.append(id, LogType.RUNTIME, 'origin 2', new Date(), 'stderr', 2);
    writer.append(id, LogType.RUNTIME, 'origin 3');
    await writer.flush();
    // The line-by-line path: a seq stored meanwhile by another writer.
    const [{ max }] = await t.gateway.ds.query<Array<{ max: number }>>('SELECT max(seq) AS max FROM log_lines WHERE deployment_id = $1', [id]);
    await t.gateway.ds.query(
      `INSERT INTO log_lines (deployment_id, app_id, seq, timestamp, type, message) VALUES ($1, (SELECT app_id FROM deployments WHERE id = $1), $2, now(), 'runtime', 'theirs')`,
      [id, max + 1],
    );
    writer.append(id, LogType.RUNTIME, 'origin taken', new Date(), 'stdout', 1);
    writer.append(id, LogType.RUNTIME, 'origin 4', new Date(), 'stdout', 3);
    await writer.flush();
    expect(await origin()).toEqual([
      { message: 'origin 1', stream: 'stdout', replica: 1 },
      { message: 'origin 2', stream: 'stderr', replica: 2 },
      { message: 'origin 3', stream: null, replica: null },
      { message: 'origin 4', stream: 'stdout', replica: 3 },
    ]);
  });

  it('lines of a deleted deployment are dropped; the other deployments of the batch are stored', async () => {
    const [gone, kept] = [await failed(), await failed()];
    const writer = t.gateway.services.deployments.writer;
    await writer.open(gone);
    await writer.open(kept);
    const before = (await stored(kept)).length;
    writer.append(gone, LogType.RUNTIME, 'into the void');
    writer.append(kept, LogType.RUNTIME, 'kept 1');
    // Deleted behind the writer's back: its lines must not fail the batch.
    await t.gateway.ds.query('DELETE FROM deployments WHERE id = $1', [gone]);
    writer.append(kept, LogType.RUNTIME, 'kept 2');
    await writer.flush();
    expect((await stored(kept)).slice(before).map((l) => l.message)).toEqual(['kept 1', 'kept 2']);
    expect(await stored(gone)).toEqual([]);
    expect((await rest(t.url, owner.token, 'GET', `/deployments/${kept}/logs?type=runtime`)).body.data.map((l: { message: string }) => l.message)).toEqual(
      expect.arrayContaining(['kept 1', 'kept 2']),
    );
  });
});
