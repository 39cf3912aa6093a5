import { createPubSub } from '../../src/bus/pubsub';
import { systemClock } from '../../src/clock';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { LogWriter } from '../../src/modules/deployments/log-writer';
import type { Topics } from '../../src/modules/topics';
import { startGateway, TestGateway } from '../support/gateway';
import { liveDeployment } from '../support/factories';

/**
 * What CI caught in the runtime bench: a container's idle check failed as its deployment was
 * removed, and its "idle check failed" line reached a writer that had forgotten the deployment.
 * The throw came from a timer's callback and ended the process.
 */
describe('log writer: lines for a forgotten deployment', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway();
  });
  afterAll(() => t.stop());

  /** Its stored lines among `messages`, in order, with their sequence numbers. */
  const stored = (deploymentId: string, messages: string[]) =>
    t.gateway.ds.query<Array<{ message: string; seq: string }>>(
      'SELECT message, seq FROM log_lines WHERE deployment_id = $1 AND message = ANY($2) ORDER BY seq',
      [deploymentId, messages],
    );

  /** A live deployment and a writer that wrote `message` for it, stored it, then forgot it. */
  const writtenThenForgotten = async (message: string) => {
    const d = await liveDeployment(t);
    const writer = new LogWriter(t.gateway.ds, createPubSub<Topics>(), systemClock);
    await writer.open(d.id);
    writer.append(d.id, LogType.RUNTIME, message);
    await writer.flush();
    writer.forget(d.id);
    return { d, writer };
  };

  it('are dropped quietly once it is forgotten; a deployment never opened is still an error', async () => {
    const { d, writer } = await writtenThenForgotten('before forget');

    expect(() => writer.append(d.id, LogType.RUNTIME, 'after forget')).not.toThrow();
    await writer.flush();
    expect((await stored(d.id, ['before forget', 'after forget'])).map((r) => r.message)).toEqual(['before forget']);

    const never = await liveDeployment(t);
    expect(() => writer.append(never.id, LogType.RUNTIME, 'never opened')).toThrow(/was not opened/);
  });

  it('opened again, it continues its sequence after what is stored', async () => {
    const { d, writer } = await writtenThenForgotten('first life');
    await writer.open(d.id);
    writer.append(d.id, LogType.RUNTIME, 'second life');
    await writer.flush();
    const rows = await stored(d.id, ['first life', 'second life']);
    expect(rows.map((r) => r.message)).toEqual(['first life', 'second life']);
    expect(Number(rows[1].seq)).toBe(Number(rows[0].seq) + 1);
  });
});
