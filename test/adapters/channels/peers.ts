/**
 * Protocol peers for the channel adapter tests: real HTTP servers on 127.0.0.1, port 0.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpPeer {
  url: string;
  port: number;
  requests: { method: string; path: string; headers: http.IncomingHttpHeaders; body: Buffer }[];
  failNext(n: number, status?: number): void;
  close(): Promise<void>;
}

export type PeerHandler = (req: { method: string; path: string; headers: http.IncomingHttpHeaders; body: Buffer }) => { status?: number; headers?: Record<string, string>; body: unknown };

export async function startHttpPeer(handler: PeerHandler): Promise<HttpPeer> {
  let failing = 0;
  let failStatus = 500;
  const requests: HttpPeer['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) };
      if (failing > 0) {
        failing--;
        res.writeHead(failStatus, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'temporarily_unavailable' }));
        return;
      }
      requests.push(r);
      try {
        const out = handler(r);
        const body = typeof out.body === 'string' ? out.body : JSON.stringify(out.body);
        res.writeHead(out.status ?? 200, { 'content-type': 'application/json', ...(out.headers ?? {}) }).end(body);
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    failNext(n, status = 500) {
      failing = n;
      failStatus = status;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A port with nothing listening (a platform that is down). */
export async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
