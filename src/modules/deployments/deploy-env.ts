import { ENV_NAME_RULE, isEnvName } from '../../client/env-names';
import { FieldError, ValidationFailed } from '../../errors';

const MAX_ENV_VARS = 200;
const MAX_ENV_VALUE = 32 * 1024;

/** A deploy's env: names by the one rule every transport and the CLI share, string values; every problem named. */
export function validateEnv(env: Record<string, unknown> | null | undefined): Record<string, string> {
  if (env === null || env === undefined) return {};
  if (typeof env !== 'object' || Array.isArray(env)) throw ValidationFailed.field('env', 'must be an object of names to string values');
  const errors: FieldError[] = [];
  const entries = Object.entries(env);
  if (entries.length > MAX_ENV_VARS) errors.push({ field: 'env', message: `at most ${MAX_ENV_VARS} variables` });
  for (const [k, v] of entries) {
    if (!isEnvName(k)) errors.push({ field: `env.${k}`, message: `name ${ENV_NAME_RULE}` });
    else if (typeof v !== 'string') errors.push({ field: `env.${k}`, message: 'value must be a string' });
    else if (v.length > MAX_ENV_VALUE) errors.push({ field: `env.${k}`, message: `value must be at most ${MAX_ENV_VALUE} characters` });
  }
  if (errors.length) throw new ValidationFailed(errors);
  return env as Record<string, string>;
}
