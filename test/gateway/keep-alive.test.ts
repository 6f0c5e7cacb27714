// Idle client connections outlive the clients' own keep-alive: a POST sent on a socket the server
// was closing fails with ECONNRESET, and clients do not retry a POST (seen in bench chaos).
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KEEP_ALIVE_TIMEOUT_MS } from '../../gateway/server.ts';
import { startRig, type TestRig } from '../helpers/gateway.ts';

/** Node's own keepAliveTimeout, which the server had before (5 s): idle past it, still served. */
const NODE_DEFAULT_KEEP_ALIVE_MS = 5_000;
let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** One GET on an open socket; resolves with the response head once the body (Content-Length) is in. */
function get(sock: Socket, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
      if (buf.length < end + 4 + len) return;
      sock.off('data', onData);
      sock.off('close', onClose);
      resolve(buf.slice(0, end));
    };
    const onClose = (): void => reject(new Error('server closed the connection'));
    sock.on('data', onData);
    sock.once('close', onClose);
    sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`);
  });
}

describe('client keep-alive', () => {
  it('announces and keeps KEEP_ALIVE_TIMEOUT_MS: an idle socket past Node default still serves', async () => {
    rig = await startRig();
    const { port } = new URL(rig.gw.url);
    const sock = connect(Number(port), '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    try {
      const head = await get(sock, '/health');
      expect(head).toMatch(/^HTTP\/1\.1 200/);
      expect(head).toMatch(new RegExp(`keep-alive: timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`, 'i'));
      await new Promise((r) => setTimeout(r, NODE_DEFAULT_KEEP_ALIVE_MS + 1_000));
      expect(await get(sock, '/health')).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      sock.destroy();
    }
  }, 30_000);
});
