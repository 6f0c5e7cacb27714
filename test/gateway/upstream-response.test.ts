// requestUpstream (gateway/proxy/upstream-response.ts): undici dispatch() with the gateway's own
// handler, against a real HTTP server on a socket. The body reads the same bytes as request()'s,
// whole or by iteration (UTF-8 decoding across chunks), pauses the socket past its high-water
// mark, and an abort (signal, early exit of the iteration) or a broken connection ends the call
// with the right error while the server sees its request end. Every way a call ends leaves no
// listener on the attempt's signal.
import diagnostics from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptSignal } from '../../gateway/proxy/attempt-deadline.ts';
import { BODY_HIGH_WATER_BYTES, requestUpstream } from '../../gateway/proxy/upstream-response.ts';
import { until } from '../helpers/until.ts';

type Route = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Route>();
/** Requests whose connection closed before the server ended its answer. */
const cutShort: string[] = [];
let server: Server;
let pool: Pool;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    res.once('close', () => {
      if (!res.writableEnded) cutShort.push(req.url ?? '');
    });
    req.once('end', () => routes.get(req.url ?? '')?.(req, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 4 });
});

afterAll(async () => {
  await pool.destroy();
  server.closeAllConnections();
  server.close();
});

const send = (path: string, signal = new AttemptSignal()) =>
  requestUpstream(pool, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('{"x":1}'),
    signal,
  });

/**
 * A finished call leaves no listener on its attempt's signal: one left behind would retain the
 * handler, its body and (whole reads) the full answer for as long as the signal lives.
 */
async function noListenerLeft(signal: AttemptSignal): Promise<void> {
  await until(() => signal.listenerCount('abort') === 0);
}

describe('requestUpstream', () => {
  it('reads a chunked body whole, one callback per chunk, headers parsed as request() parses them', async () => {
    const parts = ['{"a":', '"chunk one",', '"b":"chunk two"}'];
    routes.set('/whole', async (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-twice': ['1', '2'] });
      for (const p of parts) {
        res.write(p);
        await sleep(20);
      }
      res.end();
    });
    const signal = new AttemptSignal();
    const r = await send('/whole', signal);
    expect(signal.listenerCount('abort')).toBe(1);
    let chunks = 0;
    const buf = await r.body.readAll(() => chunks++);
    expect(signal.listenerCount('abort')).toBe(0);
    expect(r.statusCode).toBe(201);
    expect(buf.toString()).toBe(parts.join(''));
    expect(chunks).toBeGreaterThanOrEqual(2);
    const viaRequest = await pool.request({ method: 'POST', path: '/whole', body: '{}' });
    await viaRequest.body.text();
    const { date: _d1, ...mine } = r.headers;
    const { date: _d2, ...theirs } = viaRequest.headers;
    expect(mine).toEqual(theirs);
    expect(mine['x-twice']).toEqual(['1', '2']);
  });

  it('sends a body in pieces as the same bytes and headers as one buffer, onSent once undici wrote the body', async () => {
    const seen: { raw: string[]; body: Buffer }[] = [];
    // the server answers only when told: onSent must come from the send, not from the answer
    const held: ServerResponse[] = [];
    routes.set('/pieces', (_req, res) => {
      held.push(res);
    });
    const record = (req: IncomingMessage): void => {
      if (req.url !== '/pieces') return;
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => seen.push({ raw: req.rawHeaders, body: Buffer.concat(parts) }));
    };
    let written = 0;
    const onWritten = (): void => void written++;
    server.prependListener('request', record);
    try {
      const text = `{"model":"m","messages":[{"role":"user","content":"${'é'.repeat(20_000)}"}]}`;
      const whole = Buffer.from(text);
      const cut = whole.length - 7;
      let sent = 0;
      // undici's own word that it wrote a request's whole body (published just before its
      // onRequestSent), as it stood when each onSent ran
      const writtenAtSent: number[] = [];
      diagnostics.subscribe('undici:request:bodySent', onWritten);
      for (const [i, body] of ([whole, [whole.subarray(0, cut), whole.subarray(cut)]] as const).entries()) {
        const before = sent;
        const r = requestUpstream(pool, {
          method: 'POST',
          path: '/pieces',
          headers: { 'content-type': 'application/json', 'x-request-id': 'r1' },
          body,
          signal: new AttemptSignal(),
          onSent: () => {
            sent++;
            writtenAtSent.push(written);
          },
        });
        // a buffer as pieces: undici writes after the dispatch returns (the pipeline's state write
        // waits on onSent: run here, it went before the body, on the request's critical path)
        expect(sent - before).toBe(0);
        // this request's own: onSent can come before the server has seen it (the last piece written)
        await until(() => sent - before === 1 && held.length === i + 1 && seen.length === i + 1);
        const res = held.at(-1)!;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
        const answer = await r;
        await answer.body.readAll();
        expect(answer.statusCode).toBe(200);
        expect(sent - before).toBe(1);
      }
      // each onSent came after undici wrote that request's body
      expect(writtenAtSent).toEqual([1, 2]);
      expect(seen.length).toBe(2);
      expect(seen[1].body.equals(whole)).toBe(true);
      expect(seen[1].raw).toEqual(seen[0].raw);
      expect(seen[1].raw.map((h) => h.toLowerCase())).not.toContain('transfer-encoding');
      expect(seen[1].raw).toContain(String(whole.length));
    } finally {
      server.off('request', record);
      diagnostics.unsubscribe('undici:request:bodySent', onWritten);
    }
  });

  it('iterates strings with a character split across chunks kept whole', async () => {
    const text = 'naïve — 😀 done';
    const bytes = Buffer.from(text);
    const cut = bytes.indexOf(Buffer.from('😀')) + 2; // inside the emoji's four bytes
    routes.set('/utf8', async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(bytes.subarray(0, cut));
      await sleep(30);
      res.end(bytes.subarray(cut));
    });
    const signal = new AttemptSignal();
    const r = await send('/utf8', signal);
    r.body.setEncoding('utf8');
    const seen: string[] = [];
    for await (const s of r.body) seen.push(s as string);
    expect(signal.listenerCount('abort')).toBe(0);
    expect(seen.join('')).toBe(text);
    expect(seen.every((s) => typeof s === 'string' && !s.includes('\ufffd'))).toBe(true);
  });

  it('pauses the socket past the high-water mark while nobody reads, and loses nothing', async () => {
    const chunk = Buffer.alloc(64 * 1024);
    const total = 256; // 16 MiB, far beyond the kernel's socket buffers
    routes.set('/big', async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < total; i++) {
        chunk.fill(i % 251);
        if (!res.write(Buffer.from(chunk))) await once(res, 'drain');
      }
      res.end();
    });
    const r = await send('/big');
    await sleep(300);
    expect(r.body.queuedBytes).toBeLessThan(BODY_HIGH_WATER_BYTES + 2 * chunk.length);
    let n = 0;
    let ok = true;
    for await (const c of r.body) {
      const b = c as Buffer;
      for (let i = 0; i < b.length; i += 4096) if (b[i] !== Math.floor((n + i) / chunk.length) % 251) ok = false;
      n += b.length;
    }
    expect(n).toBe(total * chunk.length);
    expect(ok).toBe(true);
  });

  it('an abort before the headers rejects with the signal reason; the server sees the request end', async () => {
    routes.set('/hang', () => undefined);
    const signal = new AttemptSignal();
    const p = send('/hang', signal);
    await sleep(50);
    const reason = new Error('client went away');
    signal.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(signal.listenerCount('abort')).toBe(0);
    await until(() => cutShort.includes('/hang'));
  });

  it('an abort mid-body fails the read with the reason; the server sees the request end', async () => {
    routes.set('/slow', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    });
    const signal = new AttemptSignal();
    const r = await send('/slow', signal);
    const read = r.body.readAll();
    await sleep(30);
    const reason = new Error('deadline');
    signal.abort(reason);
    await expect(read).rejects.toBe(reason);
    expect(signal.listenerCount('abort')).toBe(0);
    await until(() => cutShort.includes('/slow'));
  });

  it('leaving the iteration early ends the upstream request', async () => {
    routes.set('/stream', async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 100 && !res.destroyed; i++) {
        res.write(`data: ${i}\n\n`);
        await sleep(10);
      }
      res.end();
    });
    const signal = new AttemptSignal();
    const r = await send('/stream', signal);
    for await (const _ of r.body) break;
    await until(() => cutShort.includes('/stream'));
    await noListenerLeft(signal);
  });

  it('a connection the worker breaks mid-body throws undici socket error to the reader', async () => {
    routes.set('/break', async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"half":');
      await sleep(30);
      res.socket?.destroy();
    });
    const signal = new AttemptSignal();
    const r = await send('/break', signal);
    const err = (await r.body.readAll().catch((e: unknown) => e)) as { code?: string };
    expect(err.code).toBe('UND_ERR_SOCKET');
    expect(signal.listenerCount('abort')).toBe(0);
  });

  it('a refused connection rejects with the transport error', async () => {
    const dead = new Pool('http://127.0.0.1:1');
    const signal = new AttemptSignal();
    const err = (await requestUpstream(dead, {
      method: 'POST',
      path: '/',
      headers: {},
      body: '{}',
      signal,
    }).catch((e: unknown) => e)) as { code?: string };
    expect(err.code).toBe('ECONNREFUSED');
    expect(signal.listenerCount('abort')).toBe(0);
    await dead.destroy();
  });
});
