import { Column, Entity, Index, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from '../accounts/user.entity';

export enum CheckoutStatus {
  OPEN = 'open',
  PAID = 'paid',
  CANCELED = 'canceled',
}

/** A hosted checkout for an energy pack, at Stripe or at the built-in sandbox. */
@Entity('checkout_sessions')
export class CheckoutSession {
  @PrimaryColumn('text')
  id: string;

  @Index()
  @Column('text')
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  user?: User;

  @Column('text')
  provider: 'stripe' | 'sandbox';

  /** The provider's session id: what its webhook events name as `data.object.id`. */
  @Column('text', { unique: true })
  providerSessionId: string;

  @Column('text')
  url: string;

  @Column('text')
  status: CheckoutStatus;

  @Column('timestamptz')
  expiresAt: Date;

  @Column('timestamptz')
  createdAt: Date;

  @Column('timestamptz', { nullable: true })
  paidAt: Date | null;
}

/** One row per paid session: its primary key is what makes a pack credit happen at most once. */
@Entity('pack_fulfilments')
export class PackFulfilment {
  @PrimaryColumn('text')
  providerSessionId: string;

  @Column('text')
  checkoutId: string;

  @Column('text')
  userId: string;

  @Column('timestamptz')
  creditedAt: Date;
}
