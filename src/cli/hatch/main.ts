/**
 * `hatch`, the user's command-line client. Every call is a typed operation from
 * src/client/generated.ts over GraphQL HTTP or graphql-ws. Exit codes (exit-codes.ts): 0 done,
 * 1 failed (failed deploy or ping, a refusal, unreachable gateway), 2 bad usage, 3 no token or
 * a refused one, 4 not found.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs, ParseArgsConfig } from 'node:util';
import { ApiError, HatchApi, TransportError } from './api';
import { Command, Ctx, Exit, OptionSpec, OptionValues, UsageError } from './command';
import { colourWanted, ConfigFileError, resolveSettings } from './config';
import { CommandFailed, errorDocument, exitCodeOf } from './exit-codes';
import { colours } from './output';
import { PackError } from './pack';
import { accountCommands } from './commands/account';
import { appCommands } from './commands/apps';
import { cronCommands } from './commands/crons';
import { deployCommands } from './commands/deploy';
import { webhookCommands } from './commands/webhooks';
import { drainCommands } from './commands/drains';

const COMMANDS: Command[] = [...accountCommands, ...appCommands, ...deployCommands, ...cronCommands, ...webhookCommands, ...drainCommands];

const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  'api-url': {
    type: 'string',
    value: '<url>',
    description: `the gateway (default: $HATCH_API_URL, else the one you logged in to, else http://localhost:4000)`,
  },
  json: { type: 'boolean', description: 'JSON output for scripts' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
  version: { type: 'boolean', description: 'print the version' },
};

function parseConfig(specs: Record<string, OptionSpec>): NonNullable<ParseArgsConfig['options']> {
  const out: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, s] of Object.entries(specs))
    out[name] = { type: s.type, ...(s.short ? { short: s.short } : {}), ...(s.multiple ? { multiple: true } : {}) };
  return out;
}

const usageLine = (cmd: Command) => ['hatch', ...cmd.path, ...cmd.args].join(' ') + (cmd.options ? ' [options]' : '');

function optionLines(specs: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(specs).map(([name, s]) => [`${s.short ? `-${s.short}, ` : '    '}--${name}${s.value ? ` ${s.value}` : ''}`, s.description]);
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`);
}

function globalHelp(): string {
  const rows = COMMANDS.filter((c) => c.path[1] !== 'list').map((c) => [[...c.path, ...c.args].join(' '), c.summary]);
  const w = Math.max(...rows.map(([a]) => a.length));
  return [
    'hatch: the Hatchery command-line client',
    '',
    'usage: hatch <command> [arguments] [options]',
    '',
    'commands:',
    ...rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`),
    '',
    'global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'environment:',
    '  HATCH_API_URL     the gateway, like --api-url',
    '  HATCH_TOKEN       the API token; beats the one `hatch login` stored',
    '  HATCH_CONFIG_DIR  where `hatch login` keeps config.json (default $XDG_CONFIG_HOME/hatch or ~/.config/hatch)',
    '  NO_COLOR          no colour even on a terminal',
    '  HATCH_DEBUG       print the stack trace of an unexpected error',
    '',
    'exit codes: 0 done, 1 failed (a failed deploy, a refusal, an unreachable gateway), 2 bad usage,',
    '            3 not logged in or the token was refused, 4 not found',
    '',
    'Run `hatch <command> --help` for a command’s options.',
    '',
  ].join('\n');
}

function commandHelp(cmd: Command): string {
  const group = COMMANDS.filter((c) => c.path.length === 2 && c.path[0] === cmd.path[0] && c.path[1] !== 'list');
  return [
    `usage: ${usageLine(cmd)}`,
    ...(cmd.path.length === 1 ? group.map((c) => `       ${usageLine(c)}`) : []),
    '',
    cmd.summary,
    ...(cmd.help ? ['', cmd.help] : []),
    ...(cmd.options ? ['', 'options:', ...optionLines(cmd.options)] : []),
    '',
    'global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
  ].join('\n');
}

/** The longest command path the leading positionals name. */
function findCommand(words: string[]): Command | null {
  return (
    COMMANDS.find((c) => c.path.length === 2 && c.path[0] === words[0] && c.path[1] === words[1]) ??
    COMMANDS.find((c) => c.path.length === 1 && c.path[0] === words[0]) ??
    null
  );
}

function checkArity(cmd: Command, args: string[]): void {
  const required = cmd.args.filter((a) => a.startsWith('<')).length;
  const variadic = cmd.args.some((a) => a.endsWith('...>') || a.endsWith('...]'));
  if (args.length < required)
    throw new UsageError(
      `missing ${cmd.args
        .slice(args.length)
        .filter((a) => a.startsWith('<'))
        .join(' ')}`,
    );
  if (!variadic && args.length > cmd.args.length) throw new UsageError(`unexpected argument "${args[cmd.args.length]}"`);
}

/** The package's version: package.json is three levels up from the sources, four from dist/. */
function version(): string {
  for (const up of ['../../..', '../../../..']) {
    try {
      const pkg = JSON.parse(readFileSync(path.resolve(__dirname, up, 'package.json'), 'utf8')) as { version: string; bin?: { hatch?: string } };
      if (pkg.bin?.hatch) return pkg.version;
    } catch {
      // not there: try the next level
    }
  }
  return 'unknown';
}

/** An error on stderr: for people with the server's message, fields and a hint; with --json as one JSON line. */
function printError(err: unknown, json: boolean, stderrColours: ReturnType<typeof colours>): void {
  const c = stderrColours;
  const w = (s: string) => process.stderr.write(s);
  if (json) {
    // A failure the command printed itself (Ctrl-C at a prompt) has nothing more to say.
    if (err instanceof Exit && !(err instanceof CommandFailed)) return;
    return void w(JSON.stringify(errorDocument(err)) + '\n');
  }
  // A failed deployment or ping was explained by its command.
  if (err instanceof Exit) return;
  if (err instanceof ApiError) {
    for (const e of err.errors) {
      const code = e.code ? c.dim(` (${e.code})`) : '';
      // Field errors' messages usually are `field: message`; then the field lines say it all.
      const covered =
        e.fields.length > 0 && (e.message === e.fields.map((f) => `${f.field}: ${f.message}`).join('; ') || e.fields.some((f) => f.message === e.message));
      if (!covered) w(`${c.red('error:')} ${e.message}${code}\n`);
      for (const f of e.fields) w(covered ? `${c.red('error:')} ${c.bold(f.field)}: ${f.message}${code}\n` : `  ${c.bold(f.field)}: ${f.message}\n`);
    }
    if (err.errors.some((e) => e.code === 'UNAUTHENTICATED') && !err.message.includes('hatch login'))
      w('hint: run `hatch login`, or set HATCH_TOKEN to a valid token\n');
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  w(`${c.red('error:')} ${message}\n`);
  if (
    !(err instanceof TransportError || err instanceof ConfigFileError || err instanceof UsageError || err instanceof PackError) &&
    process.env.HATCH_DEBUG &&
    err instanceof Error
  ) {
    w(`${err.stack}\n`);
  }
}

export async function main(argv: string[]): Promise<number> {
  const stdoutColours = colours(colourWanted());
  const stderrColours = colours(colourWanted() && Boolean(process.stderr.isTTY));
  const allOptions: Record<string, OptionSpec> = { ...GLOBAL_OPTIONS };
  for (const c of COMMANDS) Object.assign(allOptions, c.options);
  // A loose first pass only to find the command; the strict pass below knows its options.
  const loose = parseArgs({ args: argv, options: parseConfig(allOptions), strict: false, allowPositionals: true });
  const wantsJson = loose.values.json === true;
  let cmd: Command | null = null;
  try {
    const words = loose.positionals[0] === 'help' ? loose.positionals.slice(1) : loose.positionals;
    if (loose.values.version && words.length === 0) {
      process.stdout.write(wantsJson ? JSON.stringify({ version: version() }) + '\n' : `hatch ${version()}\n`);
      return 0;
    }
    if (words.length === 0) {
      process.stdout.write(globalHelp());
      return 0;
    }
    cmd = findCommand(words);
    if (!cmd) throw new UsageError(`unknown command "${words[0]}"; run \`hatch --help\` for the list`);
    if (loose.positionals[0] === 'help' || loose.values.help) {
      process.stdout.write(commandHelp(cmd));
      return 0;
    }
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: parseConfig({ ...GLOBAL_OPTIONS, ...cmd.options }), strict: true, allowPositionals: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const values = parsed.values as OptionValues;
    const args = parsed.positionals.slice(cmd.path.length);
    checkArity(cmd, args);

    const flagUrl = typeof values['api-url'] === 'string' ? values['api-url'] : undefined;
    const settings = resolveSettings(flagUrl);
    let url: URL;
    try {
      url = new URL(settings.apiUrl);
    } catch {
      throw new UsageError(`the API URL "${settings.apiUrl}" is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the API URL must be http or https, got "${settings.apiUrl}"`);

    const ctx: Ctx = {
      settings,
      json: values.json === true,
      c: stdoutColours,
      ce: stderrColours,
      stderrIsTTY: Boolean(process.stderr.isTTY),
      stdinIsTTY: Boolean(process.stdin.isTTY),
      api() {
        if (!settings.token)
          throw new ApiError([{ message: 'not logged in: run `hatch login`, or set HATCH_TOKEN to a token', code: 'UNAUTHENTICATED', fields: [] }]);
        return new HatchApi(settings.apiUrl, settings.token);
      },
      apiWith: (token) => new HatchApi(settings.apiUrl, token),
      out: (text) => void process.stdout.write(text),
      err: (text) => void process.stderr.write(text),
    };
    return (await cmd.run(ctx, args, values)) ?? 0;
  } catch (err) {
    printError(err, wantsJson, stderrColours);
    if (err instanceof UsageError && cmd && !wantsJson) process.stderr.write(`usage: ${usageLine(cmd)}\n`);
    return exitCodeOf(err);
  }
}

/** Runs `hatch` with the process's arguments and exits with its code. */
export function runCli(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    // `hatch logs | head`: the reader left, which is not an error.
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  process.on('SIGINT', () => {
    if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
    process.exit(130);
  });
  void main(process.argv.slice(2)).then((code) => process.stdout.write('', () => process.exit(code)));
}

if (require.main === module) runCli();
