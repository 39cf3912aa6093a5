import dns from 'node:dns';
import { AddressGuard } from '../../src/modules/webhooks/address-guard';
import { WebhookSender } from '../../src/modules/webhooks/webhook-sender';

/**
 * HATCHERY_WEBHOOK_TIMEOUT_MS bounds a whole attempt, the address check's DNS lookup included: a
 * resolver that never answers cannot stretch one attempt past it (the lookup's own limit is 5 s).
 */
describe('a webhook attempt whose DNS never answers', () => {
  afterEach(() => jest.restoreAllMocks());

  it('ends at the delivery timeout with a timeout error, having connected nowhere', async () => {
    const never = jest.spyOn(dns.promises, 'lookup').mockImplementation(() => new Promise(() => undefined) as never);
    const connect = jest.spyOn(dns, 'lookup').mockImplementation(() => {
      throw new Error('the attempt must not get as far as connecting');
    });
    const sent = await new WebhookSender(new AddressGuard([]), { timeoutMs: 300 }).send('https://hangs.example/x', 'whsec_dGVzdA==', 'msg_1', new Date(), '{}');
    expect(sent).toMatchObject({ ok: false, status: null, error: 'timed out after 300 ms' });
    // Well inside the 5 s the lookup alone may take: the attempt's own budget ended it.
    expect(sent.durationMs).toBeLessThan(4000);
    expect(never).toHaveBeenCalled();
    expect(connect).not.toHaveBeenCalled();
  });
});
