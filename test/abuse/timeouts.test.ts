import { createServer, Server } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { rest, startGateway, TestGateway } from '../support/gateway';
import { makeUser } from '../support/factories';

describe('timeouts on outbound calls and SQL statements', () => {
  describe('database statements (HATCHERY_DB_STATEMENT_TIMEOUT_MS)', () => {
    let t: TestGateway;
    beforeAll(async () => {
      t = await startGateway({ HATCHERY_DB_STATEMENT_TIMEOUT_MS: '250' });
    });
    afterAll(async () => {
      await t?.stop();
    });

    it('every connection of the pool runs statements under the configured timeout', async () => {
      const settings = await Promise.all(Array.from({ length: 4 }, () => t.gateway.ds.query('SHOW statement_timeout')));
      for (const [row] of settings) expect(row.statement_timeout).toBe('250ms');
      await expect(t.gateway.ds.query('SELECT pg_sleep(2)')).rejects.toThrow(/statement timeout/);
      // The connection is usable again afterwards.
      expect((await t.gateway.ds.query('SELECT 1 AS one'))[0].one).toBe(1);
    });
  });

  describe('Stripe API calls (HATCHERY_STRIPE_TIMEOUT_MS)', () => {
    let t: TestGateway;
    let silent: Server;
    const sockets = new Set<Socket>();
    let received = 0;

    beforeAll(async () => {
      // Takes the request and never answers.
      silent = createServer(() => {
        received++;
      });
      silent.on('connection', (s) => sockets.add(s));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      t = await startGateway({
        STRIPE_SECRET_KEY: 'sk_test_fake',
        STRIPE_PRICE_ID: 'price_123',
        STRIPE_WEBHOOK_SECRET: 'whsec_x',
        STRIPE_API_BASE: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        HATCHERY_STRIPE_TIMEOUT_MS: '300',
      });
    });
    afterAll(async () => {
      await t?.stop();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent?.close(resolve));
    });

    it('a Stripe that never answers gives the client a 5xx within seconds, not a hung request', async () => {
      const user = await makeUser(t.gateway);
      const started = Date.now();
      const res = await rest(t.url, user.token, 'POST', '/billing/energy-pack/checkout');
      const took = Date.now() - started;
      expect(res.status).toBeGreaterThanOrEqual(500);
      expect(res.body.code).toBe('internal_error');
      expect(received).toBeGreaterThanOrEqual(1); // the call was made and timed out, not refused
      expect(took).toBeLessThan(5000); // the SDK's default would wait 80 s per attempt
      expect((await t.gateway.ds.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE user_id = $1', [user.id]))[0].n).toBe(0);
    });
  });
});
