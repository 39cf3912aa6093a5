import { CreateLogDrainDocument } from '../../src/client/generated';
import { syslogFrame } from '../../src/modules/drains/drain-senders';
import { gqlOk, TestGateway } from '../support/gateway';
import { liveEgg, listDrains, names, parseSyslog, startDrainGateway, SyslogListener, writeLines } from './helpers';

jest.setTimeout(60_000);

describe('syslog frames (RFC 5424, octet counting)', () => {
  const line = {
    deploymentId: 'dep_01kabcdefghjkmnpqrstvwxyz0',
    seq: 7,
    timestamp: new Date('2026-11-20T12:00:00.123Z'),
    type: 'runtime',
    message: 'héllo wörld',
  };

  it('frames one message with its length in bytes, not characters', () => {
    const frame = syslogFrame({ ...line, stream: null }, 'my-egg');
    const text = frame.toString('utf8');
    const [len, ...rest] = text.split(' ');
    const msg = Buffer.from(rest.join(' '), 'utf8');
    expect(Number(len)).toBe(msg.length);
    expect(msg.length).toBeGreaterThan(rest.join(' ').length); // multi-byte characters counted as bytes
    expect(rest.join(' ')).toBe('<14>1 2026-11-20T12:00:00.123Z hatchery my-egg dep_01kabcdefghjkmnpqrstvwxyz0 runtime - héllo wörld');
  });

  it('standard error is severity err (PRI 11), standard output and unknown info (PRI 14)', () => {
    expect(syslogFrame({ ...line, stream: 'stderr' }, 'e').toString()).toMatch(/^\d+ <11>1 /);
    expect(syslogFrame({ ...line, stream: 'stdout' }, 'e').toString()).toMatch(/^\d+ <14>1 /);
    expect(syslogFrame({ ...line, stream: null }, 'e').toString()).toMatch(/^\d+ <14>1 /);
    const stderr = syslogFrame({ ...line, stream: 'stderr' }, 'e');
    const space = stderr.indexOf(0x20);
    expect(parseSyslog(stderr.subarray(space + 1), Number(stderr.subarray(0, space).toString()))).toMatchObject({ pri: 11, appName: 'e', msgId: 'runtime' });
  });
});

describe('syslog+tls log drains', () => {
  let listener: SyslogListener;
  let t: TestGateway;

  beforeAll(async () => {
    listener = await SyslogListener.start();
    t = await startDrainGateway(listener.cert.certFile, { HATCHERY_LOG_DRAIN_POLL_MS: '60000', HATCHERY_LOG_DRAIN_BATCH_LINES: '64' });
  });
  afterAll(async () => {
    await t.stop();
    await listener.stop();
  });

  it('ships each line as an RFC 5424 message over TLS, octet-counted, with the egg, deployment and type in the header', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    const { createLogDrain } = await gqlOk(t.url, owner.token, CreateLogDrainDocument, { app: slug, url: listener.url() });
    // The format follows the scheme; syslog has no signing secret.
    expect(createLogDrain).toMatchObject({ secret: null, logDrain: { format: 'SYSLOG', status: 'ACTIVE', url: listener.url() } });

    const messages = [...names('sys', 200), 'with spaces  and ünïcödé ✓', 'a line\nwith a newline inside'];
    await writeLines(t.gateway, deploymentId, messages);
    await listener.untilMessages(messages);
    expect(listener.errors).toEqual([]);
    const ours = listener.messages.filter((m) => messages.includes(m.msg));
    expect(ours.map((m) => m.msg)).toEqual(messages);
    for (const m of ours) {
      expect(m).toMatchObject({ pri: 14, version: 1, hostname: 'hatchery', appName: slug, procId: deploymentId, msgId: 'runtime', structuredData: '-' });
      expect(m.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    const [{ n }] = await t.gateway.ds.query('SELECT count(*)::int AS n FROM log_lines WHERE deployment_id = $1', [deploymentId]);
    const stored: Array<{ seq: number; message: string }> = await t.gateway.ds.query(
      'SELECT seq, message FROM log_lines WHERE deployment_id = $1 AND message = ANY($2) ORDER BY seq',
      [deploymentId, messages],
    );
    expect(stored).toHaveLength(messages.length);
    expect(n).toBeGreaterThanOrEqual(messages.length);
    // One connection carried it all.
    expect(listener.connections).toBe(1);
    const listed = (await listDrains(t, owner.token, slug)).body.data[0];
    expect(listed).toMatchObject({ format: 'syslog', status: 'active', last_error: null });
    expect(listed.last_delivered_at).toEqual(expect.any(String));
  });

  it('reconnects after the listener cut the connection and goes on from the cursor, in order', async () => {
    const { owner, slug, deploymentId } = await liveEgg(t);
    await gqlOk(t.url, owner.token, CreateLogDrainDocument, { app: slug, url: listener.url(), format: 'SYSLOG' });
    const first = names('one', 50);
    await writeLines(t.gateway, deploymentId, first);
    await listener.untilMessages(first);
    const connections = listener.connections;
    listener.cut();
    const second = names('two', 50);
    await writeLines(t.gateway, deploymentId, second);
    await listener.untilMessages(second);
    expect(listener.connections).toBeGreaterThan(connections);
    // Lines written as the connection was cut may come twice (at least once), never out of order.
    const firstSeen: string[] = [];
    for (const m of listener.messages) if (m.procId === deploymentId && !firstSeen.includes(m.msg)) firstSeen.push(m.msg);
    expect(firstSeen.filter((m) => /^(one|two)-/.test(m))).toEqual([...first, ...second]);
  });
});
