import { CreateEnergyPackCheckoutDocument, EnergyDocument, ViewerDocument } from '../../../client/generated';
import { ApiError } from '../api';
import { configFile, readStoredConfig, removeStoredToken, writeStoredConfig } from '../config';
import { Command, Exit, str, UsageError } from '../command';
import { details, json, table } from '../output';

/** Reads a token from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    let value = '';
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const finish = (err: Error | null) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value.trim());
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish(null);
        if (ch === '\u0003' || ch === '\u0004') return finish(new Exit(130));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0].trim();
}

export const accountCommands: Command[] = [
  {
    path: ['login'],
    args: [],
    summary: 'store an API token for later commands',
    help:
      'Verifies the token with the gateway and stores it, with the API URL, in the config file\n' +
      '($HATCH_CONFIG_DIR, else $XDG_CONFIG_HOME/hatch, else ~/.config/hatch; mode 0600).\n' +
      'Without --token it asks on a terminal, or reads the first line of stdin.',
    options: { token: { type: 'string', value: '<token>', description: 'the token (`hatch_…`); asked for when omitted' } },
    async run(ctx, _args, options) {
      let token = str(options, 'token');
      if (token === undefined) token = ctx.stdinIsTTY ? await promptHidden('API token: ') : await readStdin();
      token = token.trim();
      if (!token) throw new UsageError('no token given');
      let viewer;
      try {
        viewer = (await ctx.apiWith(token).request(ViewerDocument, {})).viewer;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'UNAUTHENTICATED') {
          throw new ApiError([{ message: `${ctx.settings.apiUrl} refused the token; nothing was stored`, code: 'UNAUTHENTICATED', fields: [] }]);
        }
        throw err;
      }
      const file = writeStoredConfig({ ...readStoredConfig(), token, apiUrl: ctx.settings.apiUrl });
      if (ctx.json) ctx.out(json({ email: viewer.email, id: viewer.id, apiUrl: ctx.settings.apiUrl, configFile: file }));
      else ctx.out(`Logged in to ${ctx.settings.apiUrl} as ${ctx.c.bold(viewer.email)}; token stored in ${file}\n`);
    },
  },
  {
    path: ['logout'],
    args: [],
    summary: 'forget the stored token',
    run(ctx) {
      const removed = removeStoredToken();
      if (ctx.json) ctx.out(json({ removed }));
      else ctx.out(removed ? `Removed the token from ${configFile()}\n` : 'No stored token.\n');
      return Promise.resolve();
    },
  },
  {
    path: ['whoami'],
    args: [],
    summary: 'show the account the token belongs to',
    async run(ctx) {
      const { viewer } = await ctx.api().request(ViewerDocument, {});
      const tokenFrom = ctx.settings.tokenSource === 'HATCH_TOKEN' ? 'HATCH_TOKEN' : configFile();
      if (ctx.json) return ctx.out(json({ ...viewer, apiUrl: ctx.settings.apiUrl, tokenFrom }));
      ctx.out(
        details(ctx.c, [
          ['email', viewer.email],
          ['id', viewer.id],
          ['api', ctx.settings.apiUrl],
          ['token', `from ${tokenFrom}`],
        ]),
      );
    },
  },
  {
    path: ['energy'],
    args: [],
    summary: 'show the energy balance in minutes (daily, weekly, bonus, pack, total)',
    async run(ctx) {
      const { energy } = await ctx.api().request(EnergyDocument, {});
      if (ctx.json) return ctx.out(json(energy));
      ctx.out(
        table(
          ctx.c,
          ['BUCKET', 'MINUTES', 'RESETS AT'],
          [
            ['daily', energy.daily, energy.dailyResetsAt],
            ['weekly', energy.weekly, energy.weeklyResetsAt],
            ['bonus', energy.bonus, null],
            ['pack', energy.pack, 'never expires'],
            ['total', energy.total, null],
          ],
        ),
      );
      if (energy.depleted) ctx.out(ctx.c.red('Energy is depleted: scheduled cron runs are skipped. `hatch checkout` buys a pack.') + '\n');
    },
  },
  {
    path: ['checkout'],
    args: [],
    summary: 'start buying an energy pack; prints the hosted payment URL',
    async run(ctx) {
      const { createEnergyPackCheckout: s } = await ctx.api().request(CreateEnergyPackCheckoutDocument, {});
      if (ctx.json) return ctx.out(json(s));
      if (ctx.stderrIsTTY) ctx.err(`Pay for 1,000 pack minutes at this address (valid until ${s.expiresAt}):\n`);
      ctx.out(s.checkoutUrl + '\n');
    },
  },
];
