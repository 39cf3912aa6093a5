/**
 * Where the CLI finds its API and token. The flag beats the environment, which beats what
 * `hatch login` stored. This file is the CLI's only reader of the environment's settings.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

export const DEFAULT_API_URL = 'http://localhost:4000';

export interface StoredConfig {
  token?: string;
  apiUrl?: string;
}

export class ConfigFileError extends Error {}

/** `$HATCH_CONFIG_DIR`, else `$XDG_CONFIG_HOME/hatch`, else `~/.config/hatch`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HATCH_CONFIG_DIR) return path.resolve(env.HATCH_CONFIG_DIR);
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(homedir(), '.config');
  return path.join(base, 'hatch');
}

export function configFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(configDir(env), 'config.json');
}

export function readStoredConfig(env: NodeJS.ProcessEnv = process.env): StoredConfig {
  const file = configFile(env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    const { token, apiUrl } = parsed as Record<string, unknown>;
    return { token: typeof token === 'string' ? token : undefined, apiUrl: typeof apiUrl === 'string' ? apiUrl : undefined };
  } catch (err) {
    throw new ConfigFileError(`${file} is not valid: ${(err as Error).message}; run \`hatch login\` again`);
  }
}

/**
 * Written to a temporary file created with mode 0600 and renamed over the old one, so the token
 * is never readable by others, not even for a moment, and a crash leaves the old file whole.
 */
export function writeStoredConfig(config: StoredConfig, env: NodeJS.ProcessEnv = process.env): string {
  const file = configFile(env);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600, flag: 'w' });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return file;
}

export function removeStoredToken(env: NodeJS.ProcessEnv = process.env): boolean {
  const stored = readStoredConfig(env);
  if (!stored.token) return false;
  writeStoredConfig({ apiUrl: stored.apiUrl }, env);
  return true;
}

export interface Settings {
  apiUrl: string;
  token: string | null;
  /** Where the token came from, for messages. */
  tokenSource: 'HATCH_TOKEN' | 'config' | null;
}

export function resolveSettings(flagApiUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): Settings {
  const stored = readStoredConfig(env);
  const apiUrl = (flagApiUrl || env.HATCH_API_URL || stored.apiUrl || DEFAULT_API_URL).replace(/\/+$/, '');
  if (env.HATCH_TOKEN) return { apiUrl, token: env.HATCH_TOKEN.trim(), tokenSource: 'HATCH_TOKEN' };
  if (stored.token) return { apiUrl, token: stored.token, tokenSource: 'config' };
  return { apiUrl, token: null, tokenSource: null };
}

/** Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function colourWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(process.stdout.isTTY) && !env.NO_COLOR;
}
