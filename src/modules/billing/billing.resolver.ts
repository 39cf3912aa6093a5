import { Ctx, Field, Mutation, ObjectType, Resolver } from 'type-graphql';
import { Context } from '../../graphql/context';
import { CheckoutView } from './billing.service';

@ObjectType({ simpleResolvers: true, description: 'A hosted payment session for a 1,000-minute energy pack.' })
class EnergyPackCheckout implements CheckoutView {
  @Field(() => String, { description: 'Checkout session id, `chk_…`.' })
  sessionId: string;

  @Field(() => String, { description: 'Where the user pays: a Stripe Checkout page, or the gateway’s sandbox page.' })
  checkoutUrl: string;

  @Field(() => Date, { description: 'When the session stops accepting payment.' })
  expiresAt: Date;
}

@Resolver()
export class BillingResolver {
  @Mutation(() => EnergyPackCheckout, {
    description: 'Starts a checkout for a 1,000-minute energy pack (never expires); paying credits it to the caller’s pack bucket once.',
  })
  createEnergyPackCheckout(@Ctx() ctx: Context): Promise<EnergyPackCheckout> {
    return ctx.services.billing.createCheckout(ctx.actor);
  }
}
