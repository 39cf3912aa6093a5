import http from 'node:http';

/** A request through the router with a Host header (connects to 127.0.0.1: Node does not resolve *.localhost). */
export function viaRouter(routerUrl: string, host: string, urlPath = '/'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const { port } = new URL(routerUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends `request` again and again until `stop()`: the bodies of the 200s in order (`seen`), and
 * every other answer or error (`failures`), to prove a change drops no request.
 */
export function requestLoop(request: () => Promise<{ status: number; body: string }>): {
  seen: string[];
  failures: string[];
  stop: () => Promise<void>;
} {
  let looping = true;
  const seen: string[] = [];
  const failures: string[] = [];
  const loop = (async () => {
    while (looping) {
      try {
        const r = await request();
        if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
        else seen.push(r.body);
      } catch (err) {
        failures.push(String(err));
      }
    }
  })();
  return {
    seen,
    failures,
    stop: async () => {
      looping = false;
      await loop;
    },
  };
}
