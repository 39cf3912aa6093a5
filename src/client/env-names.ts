/**
 * The one rule for deploy env variable names, shared by the gateway (every transport) and the
 * `hatch` CLI. `__proto__` fits the pattern but is refused: assigned to a plain object it sets
 * the prototype instead of a variable, so it cannot round-trip through JavaScript code.
 */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The rule in words, for error messages. */
export const ENV_NAME_RULE = `must match ${ENV_NAME_PATTERN.source} and not be __proto__`;

export function isEnvName(name: string): boolean {
  return ENV_NAME_PATTERN.test(name) && name !== '__proto__';
}
