import type { execute } from 'graphql';
import type { Logger } from '../log';
import { presentResponse, Route } from './routes';

export const NDJSON = 'application/x-ndjson';

/** Whether the client asks for NDJSON (`Accept: application/x-ndjson`, any parameters). */
export function wantsNdjson(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => part.split(';')[0].trim().toLowerCase() === NDJSON);
}

/**
 * A list's items as NDJSON, from the first page on, each next page read only once the previous
 * one was taken by the socket (Readable.from pulls as it drains): constant memory, whatever the
 * length. A page that fails midway ends the response cut short (the client sees no final chunk).
 */
export async function* downloadLines(
  route: Route,
  first: Record<string, unknown>,
  variables: Record<string, unknown>,
  run: (vars: Record<string, unknown>) => ReturnType<typeof execute>,
  log: Logger,
): AsyncGenerator<string, void> {
  let data = first;
  for (;;) {
    const page = presentResponse(route, data) as { data: unknown[]; has_more: boolean; next_cursor: string | null };
    if (page.data.length) yield page.data.map((item) => JSON.stringify(item)).join('\n') + '\n';
    if (!page.has_more || !page.next_cursor || (variables.tail !== undefined && variables.tail !== null)) return;
    const next = await run({ ...variables, cursor: page.next_cursor });
    if (next.errors?.length) {
      log.warn({ err: next.errors[0], route: route.path }, 'download cut short');
      throw next.errors[0];
    }
    data = next.data as Record<string, unknown>;
  }
}
