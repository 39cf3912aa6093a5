import net from 'node:net';
import { startGateway } from '../support/gateway';

/**
 * Stopping the gateway waits for in-flight requests for HATCHERY_SHUTDOWN_GRACE_MS, then cuts what
 * is left. A connection opened with no request on it (an HTTP client's spare one) is not idle to
 * Node: without the cut, it held the stop until the client or the server's header timeout let go.
 */
describe('stopping with connections that never send a request', () => {
  it('cuts them after the grace period instead of waiting on them', async () => {
    const t = await startGateway({ HATCHERY_SHUTDOWN_GRACE_MS: '300' });
    const { port } = new URL(t.url);
    const sockets = await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
            s.once('error', reject);
          }),
      ),
    );
    const closed = sockets.map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())));
    // One connection mid-request too: headers sent, never finished.
    sockets[2].write('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');

    const started = performance.now();
    await t.stop();
    const took = performance.now() - started;
    await Promise.all(closed);
    // The grace period, then the cut: well under Node's 60 s header timeout.
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(10_000);
  }, 30_000);
});
