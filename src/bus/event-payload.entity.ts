import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Events too large for a NOTIFY payload (PostgreSQL caps it below 8000 bytes): the sender stores
 * them here and notifies the row's id; receivers load them. Rows are pruned after a few minutes.
 */
@Entity('event_payloads')
export class EventPayload {
  @PrimaryColumn('uuid')
  id: string;

  @Column('jsonb')
  payload: unknown;

  @Index()
  @Column('timestamptz', { default: () => 'now()' })
  createdAt: Date;
}
