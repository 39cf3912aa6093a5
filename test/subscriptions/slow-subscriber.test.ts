import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import WebSocket from 'ws';
import { DeploymentLogBatchStreamDocument, DeploymentLogStreamDocument } from '../../src/client/generated';
import { LogType } from '../../src/modules/deployments/log-line.entity';
import { collect, startGateway, TestGateway, wsClient } from '../support/gateway';
import { deploy, makeApp, makeUser, settle } from '../support/factories';
import { wsText } from '../support/ws-text';

/**
 * A subscriber that stops reading must not take the gateway down or hold unbounded memory:
 * its own stream ends with LIMIT_EXCEEDED once it falls too far behind; others carry on.
 */
describe('a subscriber that stops reading', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_SUBSCRIPTION_MAX_PENDING: '200' });
  });
  afterAll(() => t.stop());

  type Line = { message: string };
  it.each([
    ['deploymentLogs', DeploymentLogStreamDocument, (items: unknown[]) => (items as Array<{ deploymentLogs: Line }>).map((i) => i.deploymentLogs)],
    // Live batches are written straight to a subscriber's socket while it keeps up (src/bus/pubsub.ts,
    // DIRECT): a socket that stops reading falls back to the stream's bounded queue all the same.
    [
      'deploymentLogBatches',
      DeploymentLogBatchStreamDocument,
      (items: unknown[]) => (items as Array<{ deploymentLogBatches: Line[] }>).flatMap((i) => i.deploymentLogBatches),
    ],
  ] as const)(
    '%s: gets its own stream ended while the gateway and other subscribers carry on',
    async (_field, document, linesOf) => {
      const user = await makeUser(t.gateway);
      const slug = (await makeApp(t.url, user)).slug;
      const d = await deploy(t.url, user, slug);
      expect(await settle(t.url, user, d.id)).toBe('LIVE');

      // A raw graphql-ws client whose socket we pause once the stream is running.
      const slow = new WebSocket(t.url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
      const messages: Array<{ type: string; payload?: unknown }> = [];
      await new Promise((resolve) => slow.once('open', resolve));
      slow.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
      await new Promise<void>((resolve) => slow.once('message', () => resolve()));
      slow.on('message', (m) => messages.push(JSON.parse(wsText(m))));
      slow.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: print(document), variables: { id: d.id } } }));

      const healthy = wsClient(t.url, user.token);
      const fine = collect(healthy, document as TypedDocumentNode<unknown, Record<string, unknown>>, { id: d.id, type: 'RUNTIME' });
      // The go-live lines ("Starting …", "Listening on port 8080") come first.
      const untilLines = async (n: number) => {
        while (linesOf(fine.items).length < n) await fine.waitFor(fine.items.length + 1);
        return linesOf(fine.items);
      };
      const before = (await untilLines(2)).length;

      // Stop reading: the kernel buffers fill, the server cannot send, events pile up for it.
      (slow as unknown as { _socket: { pause(): void } })._socket.pause();
      const writer = t.gateway.services.deployments.writer;
      await writer.open(d.id);
      // Written in small batches, each awaited by the healthy subscriber, which therefore never
      // falls behind; the paused one falls further behind with every batch.
      const big = 'x'.repeat(16 * 1024);
      const total = 2000;
      for (let i = 0; i < total; i += 20) {
        for (let j = i; j < i + 20; j++) writer.append(d.id, LogType.RUNTIME, `line ${j} ${big}`);
        await writer.flush();
        await untilLines(before + i + 20);
      }
      // The healthy subscriber still gets every line, and the gateway still answers.
      const got = await untilLines(before + total);
      const written = got.map((g) => g.message).filter((m) => m.startsWith('line '));
      expect(written.map((m) => m.split(' ')[1])).toEqual(Array.from({ length: total }, (_, i) => String(i)));
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);

      // Once the slow socket reads again, its stream has ended with LIMIT_EXCEEDED.
      (slow as unknown as { _socket: { resume(): void } })._socket.resume();
      await new Promise<void>((resolve) => {
        const check = () => (messages.some((m) => m.type === 'error' || m.type === 'complete') ? resolve() : slow.once('message', check));
        check();
      });
      const end = messages.find((m) => m.type === 'error' || m.type === 'complete')!;
      expect(JSON.stringify(end.payload ?? messages.filter((m) => m.type === 'next').at(-1))).toMatch(/LIMIT_EXCEEDED/);
      slow.close();
      fine.unsubscribe();
      await healthy.dispose();
    },
    60_000,
  );
});
