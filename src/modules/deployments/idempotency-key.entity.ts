import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A deploy request remembered by its Idempotency-Key, per account, for 24 hours. */
@Entity('idempotency_keys')
export class IdempotencyKey {
  @PrimaryColumn('text')
  userId: string;

  @PrimaryColumn('text')
  key: string;

  /** Keyed digest of the request body, so a reuse with another body is caught. */
  @Column('text')
  requestDigest: string;

  /** The deployment as the first response returned it. */
  @Column('jsonb')
  response: Record<string, unknown>;

  @Column('timestamptz')
  createdAt: Date;
}
