import { ConfigError, loadConfig } from '../../src/config';

/**
 * Stripe is used when STRIPE_SECRET_KEY is set, and then it needs the pack's price and the webhook
 * secret: a gateway that made real Checkout Sessions it could never fulfil (no price, or events it
 * cannot verify) must refuse to start instead.
 */
describe('Stripe settings in loadConfig', () => {
  const configError = (env: Record<string, string>): ConfigError => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return err as ConfigError;
    }
    throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
  };

  it('STRIPE_SECRET_KEY without STRIPE_PRICE_ID is a ConfigError naming STRIPE_PRICE_ID', () => {
    expect(configError({ STRIPE_SECRET_KEY: 'sk_test_x' }).message).toMatch(/STRIPE_PRICE_ID/);
    expect(configError({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }).message).toMatch(/STRIPE_PRICE_ID/);
    expect(configError({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_ID: '', STRIPE_WEBHOOK_SECRET: 'whsec_x' }).message).toMatch(/STRIPE_PRICE_ID/);
  });

  it('STRIPE_SECRET_KEY and STRIPE_PRICE_ID without STRIPE_WEBHOOK_SECRET is a ConfigError naming STRIPE_WEBHOOK_SECRET', () => {
    expect(configError({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_ID: 'price_x' }).message).toMatch(/STRIPE_WEBHOOK_SECRET/);
    expect(configError({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_ID: 'price_x', STRIPE_WEBHOOK_SECRET: '' }).message).toMatch(/STRIPE_WEBHOOK_SECRET/);
  });

  it('all three set: Stripe is configured with them', () => {
    expect(loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PRICE_ID: 'price_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }).stripe).toEqual({
      secretKey: 'sk_test_x',
      priceId: 'price_x',
      webhookSecret: 'whsec_x',
      apiBase: null,
    });
  });

  it('no Stripe settings at all is the sandbox default: nothing required, the webhook secret left to the data dir', () => {
    expect(loadConfig({}).stripe).toEqual({ secretKey: null, priceId: null, webhookSecret: null, apiBase: null });
    // The sandbox signs its own events, so a configured webhook secret alone is fine, and so is a price alone.
    expect(loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_x' }).stripe).toMatchObject({ secretKey: null, webhookSecret: 'whsec_x' });
    expect(loadConfig({ STRIPE_PRICE_ID: 'price_x' }).stripe).toMatchObject({ secretKey: null, priceId: 'price_x' });
  });
});
