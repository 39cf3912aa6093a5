import type { ExecutionResult } from 'graphql';
import { createLogger } from '../../src/log';
import { downloadLines, wantsNdjson } from '../../src/rest/download';
import { routes } from '../../src/rest/routes';

const route = routes.find((r) => r.method === 'GET' && r.path === '/deployments/:id/logs')!;

/** The operation's data for page `n` of `pages`, two lines each, as the GraphQL list answers it. */
const pageData = (n: number, pages: number) => ({
  deployment: {
    logsRemovedBefore: null,
    logs: {
      nodes: [0, 1].map((i) => ({ timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n * 2 + i)).toISOString(), type: 'RUNTIME', message: `line ${n * 2 + i}` })),
      pageInfo: { hasNextPage: n < pages - 1, endCursor: n < pages - 1 ? `cursor-${n}` : null },
    },
  },
});

/**
 * `Accept: application/x-ndjson` downloads a list whole in constant memory: the generator reads the
 * next page only when the previous one was taken (test/deployments/app-logs checks the download end
 * to end, past any page size).
 */
describe('NDJSON downloads', () => {
  const log = createLogger('silent');

  it('reads a page only once the one before was taken: one page in memory, however long the list', async () => {
    const reads: unknown[] = [];
    const run = (vars: Record<string, unknown>) => {
      reads.push(vars.cursor);
      return Promise.resolve({ data: pageData(reads.length, 5) } as ExecutionResult);
    };
    const lines = downloadLines(route, pageData(0, 5), { id: 'dep_x', limit: 2 }, run, log);
    for (let taken = 1; taken <= 5; taken++) {
      const { value, done } = await lines.next();
      expect(done).toBe(false);
      expect(
        value!
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).message),
      ).toEqual([`line ${(taken - 1) * 2}`, `line ${(taken - 1) * 2 + 1}`]);
      // The page just taken came from the reads so far; the next one is not read yet.
      expect(reads).toHaveLength(taken - 1);
    }
    expect((await lines.next()).done).toBe(true);
    expect(reads).toEqual(['cursor-0', 'cursor-1', 'cursor-2', 'cursor-3']);
  });

  it('with tail, one page; a page that fails ends the download with its error', async () => {
    const run = jest.fn(() => Promise.resolve({ data: pageData(1, 3) } as ExecutionResult));
    const tail = downloadLines(route, pageData(0, 3), { id: 'dep_x', tail: 2 }, run, log);
    expect((await tail.next()).done).toBe(false);
    expect((await tail.next()).done).toBe(true);
    expect(run).not.toHaveBeenCalled();

    const failing = downloadLines(
      route,
      pageData(0, 3),
      { id: 'dep_x' },
      () => Promise.resolve({ errors: [new Error('gone')] } as unknown as ExecutionResult),
      log,
    );
    await failing.next();
    await expect(failing.next()).rejects.toThrow('gone');
  });

  it('is asked for by Accept: application/x-ndjson, with parameters or among other types', () => {
    expect(wantsNdjson('application/x-ndjson')).toBe(true);
    expect(wantsNdjson('application/json, Application/X-NDJSON; q=0.9')).toBe(true);
    expect(wantsNdjson('application/json')).toBe(false);
    expect(wantsNdjson(undefined)).toBe(false);
  });
});
