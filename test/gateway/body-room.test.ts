// The upstream body's splice (body/read-body.ts, proxy/body.ts): written in place into the room
// after a copied body's bytes, or sent as two pieces (the client's bytes, a view, and the addition)
// for a body read as one chunk: the same bytes as the copying splice, every case; through a real
// gateway the upstream receives them; a body the memo keeps is never written before its last `}`
// (the memo holds the bytes before it, which stay the client's), and one read as one chunk is kept
// as Node delivered it, with no copy; over-limit bodies are still refused as before, chunked ones
// included.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { BodyMemo } from '../../gateway/body/body-memo.ts';
import { BODY_ROOM } from '../../gateway/body/read-body.ts';
import { joinedBytes, SPLICE_PIECES_MIN_BYTES, type UpstreamBytes, upstreamBody } from '../../gateway/proxy/body.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';

/** `raw` copied into an allocation with `spare` bytes after it (filled with junk), as read-body.ts does. */
function withRoom(raw: Buffer, spare = BODY_ROOM): { raw: Buffer; room: Buffer } {
  const room = Buffer.alloc(raw.length + spare, 0x58);
  raw.copy(room);
  return { raw: room.subarray(0, raw.length), room };
}

const bytes = (b: UpstreamBytes): Buffer => {
  const j = joinedBytes(b);
  return typeof j === 'string' ? Buffer.from(j) : j;
};

describe('upstreamBody in place', () => {
  const bodies = [
    '{"model":"m","messages":[{"role":"user","content":"hi"}]}',
    '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}',
    '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}\n',
    '  {"model":"m","messages":[{"role":"user","content":"héllo ✓ 🎉"}],"stream":true}  \r\n\t',
    '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}',
  ];
  const salts = [undefined, 'abc123', 'sält-ü-🎉-"quoted"\\'];
  for (const text of bodies)
    for (const salt of salts)
      it(`${JSON.stringify(text).slice(0, 60)}… salt ${salt === undefined ? 'none' : JSON.stringify(salt)}`, () => {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        const stream = parsed.stream === true;
        const copy = upstreamBody(Buffer.from(text), parsed, parsed, stream, undefined, salt);
        const { raw, room } = withRoom(Buffer.from(text));
        const inPlace = upstreamBody(raw, parsed, parsed, stream, undefined, salt, room);
        expect(bytes(inPlace.bytes).equals(bytes(copy.bytes))).toBe(true);
        expect(inPlace.clientWantsUsage).toBe(copy.clientWantsUsage);
        // the result is valid JSON with the additions
        const out = JSON.parse(bytes(inPlace.bytes).toString()) as Record<string, unknown>;
        if (salt !== undefined) expect(out.cache_salt).toBe(salt);
      });

  it('without a room, a body from SPLICE_PIECES_MIN_BYTES on goes as two pieces: the raw bytes (a view) and the addition', () => {
    for (const n of [SPLICE_PIECES_MIN_BYTES - 200, SPLICE_PIECES_MIN_BYTES, 64_000])
      for (const tail of ['', '\n', '  \r\n'])
        for (const stream of [false, true]) {
          const text = `{"model":"m","messages":[{"role":"user","content":"${'x'.repeat(n)}"}]${stream ? ',"stream":true' : ''}}${tail}`;
          const parsed = JSON.parse(text) as Record<string, unknown>;
          const raw = Buffer.from(text);
          const out = upstreamBody(raw, parsed, parsed, stream, undefined, 'sält-🎉');
          const { raw: r2, room } = withRoom(Buffer.from(text));
          const inPlace = upstreamBody(r2, parsed, parsed, stream, undefined, 'sält-🎉', room);
          expect(bytes(out.bytes).equals(bytes(inPlace.bytes))).toBe(true);
          if (raw.length < SPLICE_PIECES_MIN_BYTES) {
            expect(Buffer.isBuffer(out.bytes)).toBe(true);
            continue;
          }
          const pieces = out.bytes as readonly Buffer[];
          expect(pieces.length).toBe(2);
          // the first piece is the client's bytes up to the last brace, not a copy of them
          expect(pieces[0].buffer).toBe(raw.buffer);
          expect(pieces[0].length).toBe(text.lastIndexOf('}'));
          expect(raw.toString()).toBe(text);
        }
  });

  it('copies when the room is too small, leaving the raw bytes as they were', () => {
    const text = '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}';
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const salt = 's'.repeat(BODY_ROOM);
    const { raw, room } = withRoom(Buffer.from(text), 8);
    const out = upstreamBody(raw, parsed, parsed, true, undefined, salt, room);
    expect(
      bytes(out.bytes).equals(bytes(upstreamBody(Buffer.from(text), parsed, parsed, true, undefined, salt).bytes)),
    ).toBe(true);
    expect(raw.toString()).toBe(text);
  });
});

describe('a body the memo keeps, spliced in place', () => {
  it('parses the next bodies against it exactly, and an identical resend replaces it', () => {
    const memo = new BodyMemo({ minBytes: 64 });
    const msg = (i: number): string =>
      `{"role":"${i % 2 ? 'assistant' : 'user'}","content":"turn ${i} ${'x'.repeat(200)}"}`;
    const body = (n: number, tail = ''): string =>
      `{"model":"m","messages":[${Array.from({ length: n }, (_, i) => msg(i)).join(',')}]${tail}}`;
    const salt = 'sält-🎉';
    const send = (text: string): { value: unknown; reused: number } => {
      const { raw, room } = withRoom(Buffer.from(text));
      const out = memo.parse('t', raw, 64);
      memo.keep(out.pending);
      const parsed = out.value as Record<string, unknown>;
      const up = upstreamBody(raw, parsed, parsed, false, undefined, salt, room);
      // in place: the upstream bytes are the raw allocation's
      expect(bytes(up.bytes).buffer).toBe(room.buffer);
      expect(JSON.parse(bytes(up.bytes).toString())).toEqual({ ...JSON.parse(text), cache_salt: salt });
      return { value: out.value, reused: out.reused ?? 0 };
    };
    for (const text of [body(3), body(5), body(5), body(7, ',"stream":false'), body(9, ',"stream":false'), body(9)]) {
      const got = send(text);
      expect(got.value).toEqual(JSON.parse(text));
    }
    // every body after the first reused earlier messages
    expect(send(body(11)).reused).toBeGreaterThan(0);
    const bodies = memo.size.bodies;
    send(body(11));
    expect(memo.size.bodies).toBe(bodies);
  });
});

describe('through the gateway', () => {
  let up: Server;
  let gw: StartedGateway;
  const seen: Buffer[] = [];
  const sent: string[] = [];

  beforeAll(async () => {
    up = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        seen.push(Buffer.concat(parts));
        const out = JSON.stringify({
          id: 'cmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
    const config = parseConfig(
      {
        listen: { host: '127.0.0.1', port: 0 },
        auth: { mode: 'none' },
        health: { interval_ms: 0 },
        tenancy: { cache_salt_secret: 'body-room-test-secret-0123456789' },
        limits: { max_body_bytes: 256 * 1024 },
        models: [
          { name: 'pass', layout: 'passthrough', workers: [{ url }] },
          // layout ctxgate: the memo keeps its bodies (the passthrough pipeline runs: no tokenizer needed)
          { name: 'kept', layout: 'ctxgate', workers: [{ url }] },
        ],
      },
      'test',
      {},
    );
    gw = await startGateway(config, { logger: false });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((r) => up?.close(() => r()));
  });

  async function post(body: string, chunked = false): Promise<{ status: number; text: string }> {
    sent.push(body);
    const u = new URL(`${gw.url}/v1/chat/completions`);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (!chunked) headers['content-length'] = String(Buffer.byteLength(body));
      const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      });
      req.on('error', reject);
      if (chunked) {
        // several chunks, no content-length: the read stops at the limit, as Fastify's did
        const b = Buffer.from(body);
        for (let i = 0; i < b.length; i += 16 * 1024) req.write(b.subarray(i, i + 16 * 1024));
        req.end();
      } else req.end(body);
    });
  }

  /** The bytes the copying splice gives for `body` (the tenant's salt, usage for streams). */
  function expected(body: string): Buffer {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    const salt = gw.ctx.salts.saltOf('default');
    return bytes(upstreamBody(Buffer.from(body), parsed, parsed, parsed.stream === true, undefined, salt).bytes);
  }

  const chat = (model: string, n: number, extra = '') =>
    `{"model":"${model}","messages":[{"role":"system","content":"${'s'.repeat(n)}"},{"role":"user","content":"q ✓"}]${extra}}\n`;

  it('a passthrough body (64 KB, stream and not, chunked) reaches the worker as the copying splice writes it', async () => {
    for (const [body, chunked] of [
      [chat('pass', 64_000), false],
      [chat('pass', 64_000, ',"stream":false'), true],
      [chat('pass', 3_000), false],
    ] as const) {
      const n = seen.length;
      const r = await post(body, chunked);
      expect(r.status).toBe(200);
      expect(seen[n].equals(expected(body))).toBe(true);
    }
  });

  it('a body the memo keeps, read as one chunk, is kept with no copy and goes upstream in pieces', async () => {
    const first = chat('kept', 20_000);
    const second = first.replace(/\]\}\n$/, ',{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}\n');
    const ups: Buffer[] = [];
    for (const body of [first, second, second]) {
      const n = seen.length;
      expect((await post(body)).status).toBe(200);
      expect(seen[n].equals(expected(body))).toBe(true);
      ups.push(seen[n]);
    }
    const memo = gw.ctx.bodies as unknown as { lru: Set<{ body: { bytes: Buffer } }> };
    const kept = [...memo.lru].map((k) => k.body.bytes);
    expect(kept.length).toBeGreaterThan(0);
    for (const k of kept) {
      // each kept body is a client body up to its last `}`
      const text = k.toString();
      expect(sent.some((s) => s.slice(0, s.lastIndexOf('}')) === text)).toBe(true);
      // as Node's HTTP parser delivered it: its allocation is the body, up to the brace and what
      // followed it, and nothing was written after it (no copy, no room)
      expect(k.byteOffset).toBe(0);
      const whole = Buffer.from(k.buffer, 0, k.buffer.byteLength);
      expect(sent.some((s) => s === whole.toString())).toBe(true);
    }
  });

  it("a body the memo keeps, read in chunks, is spliced in place after its last brace: the memo's bytes stay the client's", async () => {
    const first = chat('kept', 40_000, ',"stream":false');
    const second = first.replace(/\]\}\n$/, ',{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}\n');
    const ups: Buffer[] = [];
    for (const body of [first, second, second]) {
      const n = seen.length;
      expect((await post(body, true)).status).toBe(200);
      expect(seen[n].equals(expected(body))).toBe(true);
      ups.push(seen[n]);
    }
    const memo = gw.ctx.bodies as unknown as { lru: Set<{ body: { bytes: Buffer } }> };
    const kept = [...memo.lru].map((k) => k.body.bytes).filter((k) => k.length > 30_000);
    expect(kept.length).toBeGreaterThan(0);
    for (const k of kept) {
      expect(sent.some((s) => s.slice(0, s.lastIndexOf('}')) === k.toString())).toBe(true);
      // its allocation holds the upstream body: the splice went in place, no copy
      const whole = Buffer.from(k.buffer, k.byteOffset, k.buffer.byteLength - k.byteOffset);
      expect(ups.some((u) => whole.subarray(0, u.length).equals(u))).toBe(true);
    }
  });

  it('refuses a body over limits.max_body_bytes, declared or chunked', async () => {
    const big = chat('pass', 300 * 1024);
    for (const chunked of [false, true]) {
      const r = await post(big, chunked);
      expect(r.status).toBe(413);
      expect(JSON.parse(r.text).error.code).toBe('body_too_large');
    }
  });
});
