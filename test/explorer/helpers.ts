import { Browser, BrowserContext, chromium, Page } from 'playwright-core';

// What the functions run in the page touch; the project's tsconfig has no DOM library.
declare const document: { querySelector(selector: string): unknown };
declare const localStorage: { getItem(key: string): string | null };

/** The token the explorer keeps in the browser, if any. */
export function storedToken(page: Page): Promise<string | null> {
  return page.evaluate(() => localStorage.getItem('hatchery.explorer.token'));
}

/** Debian's chromium; `npx playwright install` needs the internet, so CI installs the package. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // Belt and braces: no name but the loopback address resolves, whatever the page asks for.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  });
}

export interface OfflineContext {
  context: BrowserContext;
  page: Page;
  /** Every request or socket the page attempted to anywhere but the gateway (all aborted). */
  foreign: string[];
  /** Request headers of each HTTP request to the gateway's /graphql. */
  graphqlRequests: Array<Record<string, string>>;
  /** Every text frame the page sent over a WebSocket, parsed. */
  wsSent: Array<{ url: string; message: { type?: string; payload?: Record<string, unknown> } }>;
  /** Uncaught errors and console errors on the page. */
  errors: string[];
}

/** A fresh browser context that may reach only `origin`; anything else is aborted and recorded. */
export async function offlineContext(browser: Browser, origin: string): Promise<OfflineContext> {
  const context = await browser.newContext();
  // Shorter than jest's timeout, so a stuck step fails with its own message.
  context.setDefaultTimeout(20_000);
  const foreign: string[] = [];
  const graphqlRequests: OfflineContext['graphqlRequests'] = [];
  const wsSent: OfflineContext['wsSent'] = [];
  const errors: string[] = [];
  const wsOrigin = origin.replace(/^http/, 'ws');
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort('blockedbyclient');
  });
  await context.routeWebSocket(
    (url) => url.origin !== wsOrigin,
    (ws) => {
      foreign.push(ws.url());
      return ws.close();
    },
  );
  const page = await context.newPage();
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/graphql' && req.method() === 'POST') graphqlRequests.push(req.headers());
  });
  page.on('websocket', (ws) => {
    ws.on('framesent', (frame) => {
      if (typeof frame.payload === 'string') wsSent.push({ url: ws.url(), message: JSON.parse(frame.payload) });
    });
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()}`);
  });
  return { context, page, foreign, graphqlRequests, wsSent, errors };
}

/** Types an operation into GraphiQL's query editor (CodeMirror) and runs it with the play button. */
export async function run(page: Page, operation: string): Promise<void> {
  await page.evaluate((text) => {
    const editor = document.querySelector('.graphiql-query-editor .CodeMirror') as { CodeMirror: { setValue(v: string): void } };
    editor.CodeMirror.setValue(text);
  }, operation);
  await page.click('button.graphiql-execute-button');
}

/** Waits (bounded by the context's default timeout) until GraphiQL's response pane contains `needle`; returns the pane's text. */
export async function waitForResponse(page: Page, needle: string): Promise<string> {
  const pane = () =>
    page.evaluate(() => {
      const editor = document.querySelector('.graphiql-response .CodeMirror') as { CodeMirror: { getValue(): string } } | null;
      return editor ? editor.CodeMirror.getValue() : '';
    });
  try {
    const handle = await page.waitForFunction(
      (n) => {
        const editor = document.querySelector('.graphiql-response .CodeMirror') as { CodeMirror: { getValue(): string } } | null;
        const text = editor ? editor.CodeMirror.getValue() : '';
        return text.includes(n) ? text : false;
      },
      needle,
      { polling: 50 },
    );
    return (await handle.jsonValue()) as string;
  } catch (err) {
    throw new Error(`${(err as Error).message}\nwaiting for ${needle} in the response pane, which shows:\n${await pane().catch(() => '(gone)')}`);
  }
}

export { GatedRuntime } from '../support/gated-runtime';
