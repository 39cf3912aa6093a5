/**
 * What `hatch` exits with, and how an error is told to a script: the one place that maps errors
 * to exit codes and to the `--json` error document (docs/cli.md, "Exit codes").
 */
import { ApiError, TransportError } from './api';
import { Exit, UsageError } from './command';
import { ConfigFileError } from './config';
import { PackError } from './pack';

export const ExitCode = {
  /** Done: the deployment is live, the command did what it said. */
  OK: 0,
  /** Failed: a failed deployment or webhook ping, a refusal by the gateway, an unreachable gateway. */
  FAILED: 1,
  /** Bad usage: an unknown command or option, a malformed argument; nothing was sent. */
  USAGE: 2,
  /** Authentication: no token, or the gateway refused the token (401). `hatch login` fixes it. */
  AUTH: 3,
  /** Not found: an unknown egg, deployment, cron, webhook… (404, `NOT_FOUND`). */
  NOT_FOUND: 4,
} as const;

/** Gateway error codes (GraphQL `extensions.code`, or a REST problem's code) with an exit code of their own. */
const BY_SERVER_CODE: Record<string, number> = {
  UNAUTHENTICATED: ExitCode.AUTH,
  NOT_FOUND: ExitCode.NOT_FOUND,
};

/**
 * A failure a command explains itself (a failed deployment or ping): its exit code and, for
 * `--json`, the code and message of the error document.
 */
export class CommandFailed extends Exit {
  constructor(
    readonly errorCode: string,
    message: string,
    code: number = ExitCode.FAILED,
  ) {
    super(code);
    this.message = message;
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof Exit) return err.code;
  if (err instanceof UsageError) return ExitCode.USAGE;
  if (err instanceof ApiError) {
    // The first error decides, but a refused token wins: nothing else can succeed without one.
    if (err.errors.some((e) => e.code === 'UNAUTHENTICATED')) return ExitCode.AUTH;
    return BY_SERVER_CODE[err.code ?? ''] ?? ExitCode.FAILED;
  }
  return ExitCode.FAILED;
}

export interface ErrorDocument {
  error: { code: string; message: string; field?: string; fields?: Array<{ field: string; message: string }> };
}

/**
 * The error as `--json` prints it on stderr: `{"error": {"code", "message", "field"?}}`, with the
 * gateway's code (`NOT_FOUND`, `BAD_USER_INPUT`…) or the CLI's own (`USAGE`, `UNREACHABLE`…);
 * `field` names the first field the gateway refused, `fields` lists them all when there are more.
 */
export function errorDocument(err: unknown): ErrorDocument {
  if (err instanceof ApiError) {
    const first = err.errors.find((e) => e.code === 'UNAUTHENTICATED') ?? err.errors[0];
    const fields = err.errors.flatMap((e) => e.fields);
    return {
      error: {
        code: first?.code ?? 'ERROR',
        message: err.errors.length > 1 ? err.message : (first?.message ?? err.message),
        ...(fields.length > 0 ? { field: fields[0].field } : {}),
        ...(fields.length > 1 ? { fields } : {}),
      },
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof CommandFailed) return { error: { code: err.errorCode, message } };
  if (err instanceof UsageError) return { error: { code: 'USAGE', message } };
  // Unreachable, not a Hatchery gateway (no GraphQL answer), or a stream it ended for good.
  if (err instanceof TransportError) return { error: { code: 'UNREACHABLE', message } };
  if (err instanceof ConfigFileError) return { error: { code: 'CONFIG', message } };
  if (err instanceof PackError) return { error: { code: 'PACK', message } };
  return { error: { code: 'INTERNAL', message } };
}
