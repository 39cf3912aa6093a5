import { Column, Entity, PrimaryColumn } from 'typeorm';

/** What the simulated runtime reports as a volume's used space; set by `admin set-volume-usage`. */
@Entity('sim_volume_usage')
export class SimVolumeUsage {
  @PrimaryColumn('text')
  slug: string;

  @Column('integer')
  usedMb: number;
}
