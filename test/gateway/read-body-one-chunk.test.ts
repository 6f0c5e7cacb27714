// readBody (gateway/body/read-body.ts): a body that arrives in one chunk owning its allocation is
// that chunk (no copy, no room); several chunks, or one that is a view into a shared or larger
// allocation, are copied into one buffer with BODY_ROOM spare bytes after them. Bytes are the
// client's either way; the length checks run first in both.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BODY_ROOM, readBody } from '../../gateway/body/read-body.ts';

interface Read {
  err: Error | null;
  body?: Buffer;
  room?: Buffer;
}

function read(chunks: (Buffer | string)[], declared?: number, limit = 1 << 20): Promise<Read> {
  const s = new PassThrough();
  const out = new Promise<Read>((resolve) =>
    readBody(s, declared === undefined ? undefined : String(declared), limit, (err, body, room) =>
      resolve({ err, body, room }),
    ),
  );
  for (const c of chunks) s.write(c);
  s.end();
  return out;
}

/** A Buffer that is the whole of its own ArrayBuffer, as Node's HTTP parser hands body chunks. */
function own(text: string): Buffer {
  const src = Buffer.from(text);
  const b = Buffer.from(new ArrayBuffer(src.length));
  src.copy(b);
  return b;
}

describe('readBody: one chunk', () => {
  it('hands out a lone chunk that owns its allocation as the body: same memory, no room', async () => {
    const c = own(`{"model":"m","messages":[${'"x",'.repeat(2000)}"y"]}`);
    const r = await read([c], c.length);
    expect(r.err).toBeNull();
    expect(r.body?.buffer).toBe(c.buffer);
    expect(r.body?.equals(c)).toBe(true);
    expect(r.room).toBeUndefined();
  });

  it('copies a lone chunk that is a view into a larger allocation, with room after it', async () => {
    const big = own(`..{"model":"m","messages":["${'z'.repeat(5000)}"]}..`);
    const view = big.subarray(2, big.length - 2);
    const r = await read([view], view.length);
    expect(r.err).toBeNull();
    expect(r.body?.equals(view)).toBe(true);
    expect(r.body?.buffer).not.toBe(big.buffer);
    expect(r.room?.length).toBe(view.length + BODY_ROOM);
    expect(r.room?.buffer).toBe(r.body?.buffer);
    // writing the room never reaches the client's bytes
    r.room?.fill(0x21, view.length);
    r.room?.fill(0x21, 0, 1);
    expect(big.subarray(2, 3).toString()).toBe('{');
  });

  it('copies a small string chunk (Buffer.from of a string may sit in the shared pool)', async () => {
    const r = await read(['{"model":"m"}'], 13);
    expect(r.err).toBeNull();
    expect(r.body?.toString()).toBe('{"model":"m"}');
    expect(r.room?.length).toBe(13 + BODY_ROOM);
  });

  it('joins several chunks into one buffer with room, bytes in order', async () => {
    const parts = [own('{"model":"m",'), own('"messages":[]'), own('}')];
    const r = await read(parts, 27);
    expect(r.err).toBeNull();
    expect(r.body?.toString()).toBe('{"model":"m","messages":[]}');
    expect(r.room?.length).toBe(r.body!.length + BODY_ROOM);
    for (const p of parts) expect(r.body?.buffer).not.toBe(p.buffer);
  });

  it('still refuses a lone chunk whose length is not the declared one, or over the limit', async () => {
    const c = own('{"model":"m"}');
    const short = await read([c], c.length + 1);
    expect((short.err as { code?: string } | null)?.code).toBe('FST_ERR_CTP_INVALID_CONTENT_LENGTH');
    const over = await read([c], undefined, c.length - 1);
    expect((over.err as { code?: string } | null)?.code).toBe('FST_ERR_CTP_BODY_TOO_LARGE');
  });
});
