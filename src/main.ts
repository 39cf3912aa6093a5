import { buildApp } from './app';
import { ConfigError, loadConfig } from './config';
import { dockerClient, probeEngine } from './runtime/docker/engine';
import { RuntimeChoice, RuntimeUnavailable, selectRuntime } from './runtime/select';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`hatchery: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let choice: RuntimeChoice;
  try {
    choice = await selectRuntime(config.runtime, config.docker.host, () => probeEngine(dockerClient(config.docker.host)));
  } catch (err) {
    if (err instanceof RuntimeUnavailable) {
      process.stderr.write(`hatchery: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const gateway = buildApp({ ...config, runtime: choice.kind });
  let stopping = false;
  // npm forwards the terminal's Ctrl-C, so one keypress can arrive twice: repeats are ignored,
  // and a shutdown that hangs is cut off after the grace period.
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.log.info({ signal }, 'shutting down');
    setTimeout(() => {
      gateway.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5000).unref();
    gateway.stop().then(
      () => process.exit(0),
      (err) => {
        gateway.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  const url = await gateway.start();
  gateway.log.info({ url, runtime: choice.kind, why: choice.why }, 'hatchery listening');
  process.stdout.write(
    `Hatchery is listening on ${url}\n  GraphQL: ${url}/graphql (graphql-ws on the same path)\n  REST:    ${url}/ (e.g. POST ${url}/deploy)\n  Runtime: ${choice.kind} (${choice.why})\n  Router: ${gateway.routerUrl} (eggs by Host: <slug>.${config.appsDomain})\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`hatchery: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
