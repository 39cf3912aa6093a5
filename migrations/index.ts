import { LogLineReplica1795760245814 } from './1795760245814-LogLineReplica';
import { LogPartitions1795559438308 } from './1795559438308-LogPartitions';
import { LogRetention1795558174739 } from './1795558174739-LogRetention';
import { LogDrains1795557105803 } from './1795557105803-LogDrains';
import { LogSearch1795556922481 } from './1795556922481-LogSearch';
import { Replicas1795547809849 } from './1795547809849-Replicas';
import { PreviewSourceFailure1795547165967 } from './1795547165967-PreviewSourceFailure';
import { CronRunFailureReason1795537986218 } from './1795537986218-CronRunFailureReason';
import { DeploymentSleep1795534642929 } from './1795534642929-DeploymentSleep';
import { DeploymentSourceImage1795531389144 } from './1795531389144-DeploymentSourceImage';
import { Sources1795530789255 } from './1795530789255-Sources';
import { HostSeparator1795519548387 } from './1795519548387-HostSeparator';
import { RunnerLease1795228617037 } from './1795228617037-RunnerLease';
import { EventPayloads1795228614320 } from './1795228614320-EventPayloads';
import { Webhooks1795226380830 } from './1795226380830-Webhooks';
import { ManualCronRuns1795226051839 } from './1795226051839-ManualCronRuns';
import { Crons1795225682120 } from './1795225682120-Crons';
import { EnergyAndBilling1795225515786 } from './1795225515786-EnergyAndBilling';
import { Previews1795225000731 } from './1795225000731-Previews';
import { Volumes1795224817543 } from './1795224817543-Volumes';
import { AppMemoryOverride1795224723572 } from './1795224723572-AppMemoryOverride';
import { DeploymentRevision1795224402337 } from './1795224402337-DeploymentRevision';
import { Foundation1795223854825 } from './1795223854825-Foundation';
import type { MigrationInterface } from 'typeorm';

type MigrationClass = new () => MigrationInterface;

/** Migrations in order; `npm run migration:generate -- <Name>` writes a new one and adds it here. */
export const migrations: MigrationClass[] = [
  Foundation1795223854825,
  DeploymentRevision1795224402337,
  AppMemoryOverride1795224723572,
  Volumes1795224817543,
  Previews1795225000731,
  EnergyAndBilling1795225515786,
  Crons1795225682120,
  ManualCronRuns1795226051839,
  Webhooks1795226380830,
  EventPayloads1795228614320,
  RunnerLease1795228617037,
  HostSeparator1795519548387,
  Sources1795530789255,
  DeploymentSourceImage1795531389144,
  DeploymentSleep1795534642929,
  CronRunFailureReason1795537986218,
  PreviewSourceFailure1795547165967,
  Replicas1795547809849,
  LogSearch1795556922481,
  LogDrains1795557105803,
  LogRetention1795558174739,
  LogPartitions1795559438308,
  LogLineReplica1795760245814,
];
