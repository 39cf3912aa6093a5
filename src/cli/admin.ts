/**
 * Operator commands. Each prints one JSON line on stdout; on bad arguments or failure it prints
 * `{"error": …}` on stderr and exits non-zero (2 for usage, 1 otherwise).
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { openDatabase } from '../app';
import { systemClock } from '../clock';
import { Config, ConfigError, loadConfig } from '../config';
import { DomainError, NotFound } from '../errors';
import { SimulatedRuntime } from '../runtime/simulated.runtime';
import { EnergyBucket } from '../modules/energy/energy.entity';
import { EnergyService } from '../modules/energy/energy.service';
import { createLogger } from '../log';
import { AccountsService, canonicalEmail } from '../modules/accounts/accounts.service';
import { AppsService } from '../modules/apps/apps.service';

const USAGE = `usage: admin <command>
  create-user <email>                    create an account; prints {"user_id", "token"}
  set-tier <slug> <free|always_on>       set an egg's tier; prints {"slug", "tier"}
  set-volume-usage <slug> <mb>           what the simulated runtime reports as the volume's used_mb; prints {"slug", "used_mb"}
  set-energy <email> [--daily N] [--weekly N] [--bonus N] [--pack N]
                                         set energy buckets in minutes; prints the balance`;

class UsageError extends Error {}

/** `flags`: the parsed options of a command that takes them (set-energy's buckets). */
type Command = (ds: DataSource, args: string[], config: Config, flags: Partial<Record<EnergyBucket, number>>) => Promise<Record<string, unknown>>;

/** `--bucket N` pairs, each bucket at most once, N a whole number. */
function energyFlags(flags: string[]): Partial<Record<EnergyBucket, number>> {
  const values: Partial<Record<EnergyBucket, number>> = {};
  const buckets = Object.values(EnergyBucket) as string[];
  if (flags.length === 0 || flags.length % 2 !== 0) throw new UsageError(`set-energy needs one or more --bucket N pairs\n${USAGE}`);
  for (let i = 0; i < flags.length; i += 2) {
    const name = flags[i].replace(/^--/, '');
    if (!flags[i].startsWith('--') || !buckets.includes(name)) throw new UsageError(`unknown option "${flags[i]}"; use --daily, --weekly, --bonus or --pack`);
    if (name in values) throw new UsageError(`--${name} given twice`);
    if (!/^\d{1,9}$/.test(flags[i + 1] ?? '')) throw new UsageError(`--${name} needs a whole number of minutes, got "${flags[i + 1] ?? ''}"`);
    values[name as EnergyBucket] = Number(flags[i + 1]);
  }
  return values;
}

/** `arity`: exact argument count, or the least for commands with options. */
const commands: Record<string, { arity: number; options?: boolean; run: Command }> = {
  'create-user': {
    arity: 1,
    run: async (ds, [email], config) => {
      const { user, token } = await new AccountsService(ds, systemClock, config.limits).createUser(email);
      return { user_id: user.id, token };
    },
  },
  'set-tier': {
    arity: 2,
    run: async (ds, [slug, tier], config) => {
      const accounts = new AccountsService(ds, systemClock, config.limits);
      const app = await new AppsService(ds, systemClock, accounts, config.appsDomain, config.limits).setTier(slug, tier);
      return { slug: app.slug, tier: app.tier };
    },
  },
  'set-energy': {
    arity: 1,
    options: true,
    run: async (ds, [email], config, flags) => {
      const energy = new EnergyService(ds, systemClock, config.energy);
      const b = await energy.setBuckets(email, flags);
      return { email: canonicalEmail(email), daily: b.daily, weekly: b.weekly, bonus: b.bonus, pack: b.pack, total: b.total, depleted: b.depleted };
    },
  },
  'set-volume-usage': {
    arity: 2,
    run: async (ds, [slug, mb]) => {
      const usedMb = Number(mb);
      if (!/^\d{1,9}$/.test(mb) || !Number.isSafeInteger(usedMb)) throw new UsageError(`mb must be a whole number of MB, got "${mb}"`);
      const exists = await ds.query<unknown[]>('SELECT 1 FROM apps WHERE slug = $1', [slug]);
      if (exists.length === 0) throw new NotFound('Egg', slug);
      await SimulatedRuntime.setVolumeUsage(ds, slug, usedMb);
      return { slug, used_mb: usedMb };
    },
  },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = commands[name];
  if (!command) throw new UsageError(name ? `unknown command "${name}"\n${USAGE}` : USAGE);
  if (command.options ? args.length < command.arity : args.length !== command.arity) {
    throw new UsageError(`${name} takes ${command.arity} argument(s)${command.options ? ' and options' : ''}\n${USAGE}`);
  }
  // Bad options fail before touching the database.
  const flags = command.options ? energyFlags(args.slice(command.arity)) : {};
  const config = loadConfig();
  const { ds, embedded } = await openDatabase(config, createLogger('silent'));
  try {
    process.stdout.write(JSON.stringify(await command.run(ds, args, config, flags)) + '\n');
    return 0;
  } finally {
    await ds.destroy();
    await embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    const usage = err instanceof UsageError || err instanceof ConfigError;
    const body: Record<string, unknown> = { error: err instanceof Error ? err.message : String(err) };
    if (err instanceof DomainError && err.errors.length) body.errors = err.errors;
    process.stderr.write(JSON.stringify(body) + '\n');
    process.exit(usage || err instanceof DomainError ? 2 : 1);
  },
);
