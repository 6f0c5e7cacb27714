// A pass-through HTTP hop in front of one reference worker that remembers each response's
// x-sim-timing by x-request-id: the gateway does not relay worker headers, and replay reports
// the worker's modeled TTFT. Bounded memory (oldest entries dropped). O(body) per request.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TAP_MAX_ENTRIES = 100_000;

export interface TimingTap {
  url: string;
  take(requestId: string): string | undefined;
  close(): Promise<void>;
}

export async function startTimingTap(target: string): Promise<TimingTap> {
  const t = new URL(target);
  const seen = new Map<string, string>();
  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const up = httpRequest(
      { host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers },
      (ur) => {
        const id = req.headers['x-request-id'];
        const timing = ur.headers['x-sim-timing'];
        if (typeof id === 'string' && typeof timing === 'string') {
          seen.set(id, timing);
          if (seen.size > TAP_MAX_ENTRIES) seen.delete(seen.keys().next().value as string);
        }
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => {
      res.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    take(id) {
      const v = seen.get(id);
      seen.delete(id);
      return v;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
