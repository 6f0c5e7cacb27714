// The Redis session store writes deltas and reads only what changed, against a real redis-server:
// two replicas (two store instances, each under its own pipeline) alternating calls of growing
// sessions give the very bodies, receipts and states one pipeline over a memory store gives; a
// write made against a version another replica replaced never mixes the two; the bytes a put
// sends (counted on the wire by a TCP relay) stay O(what changed) while the session grows.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createPipeline } from '../../middleware/pipeline.ts';
import { MemorySessionStore } from '../../middleware/session/memory-store.ts';
import { canonicalJson } from '../../middleware/canonical-json.ts';
import { CHUNK_ID_HEX, parseHead } from '../../middleware/session/redis-delta-codec.ts';
import { documentOf, RedisSessionStore, redisKey } from '../../middleware/session/redis-store.ts';
import { snapshotOf } from '../../middleware/session/shared-parts.ts';
import { SESSION_SCHEMA_VERSION, type SessionState } from '../../middleware/session/store.ts';
import type { ChatRequest, PipelineContext } from '../../middleware/types.ts';
import { randomSession, requestsOf } from './helpers/session-gen.ts';

const url = inject('redisUrl');
const opened: { close(): Promise<void> }[] = [];
const open = (o: Partial<ConstructorParameters<typeof RedisSessionStore>[0]> = {}): RedisSessionStore => {
  const s = new RedisSessionStore({ url, commandTimeoutMs: 5000, ...o });
  opened.push(s);
  return s;
};
afterAll(async () => {
  for (const s of opened) await s.close();
});

/** A TCP relay to redis-server counting the bytes each way. */
async function relay(): Promise<{ url: string; sent: () => number; received: () => number; close(): void }> {
  const target = new URL(url);
  let up = 0;
  let down = 0;
  const socks = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const r = net.connect(Number(target.port), target.hostname);
    socks.add(c).add(r);
    c.on('data', (d) => (up += d.length));
    r.on('data', (d) => (down += d.length));
    c.pipe(r).pipe(c);
    c.on('error', () => r.destroy());
    r.on('error', () => c.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    sent: () => up,
    received: () => down,
    close: () => {
      for (const s of socks) s.destroy();
      server.close();
    },
  };
}

const MODEL = 'm';
const bodyOf = (history: ChatRequest['messages']): ChatRequest => ({
  model: MODEL,
  messages: history,
  tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }],
  max_tokens: 16,
});
const ctx = (n: number, session: string): PipelineContext => ({
  tenant: 'delta-t',
  requestId: `r${n}`,
  headers: { 'x-session-id': session },
  model: MODEL,
});
/** A state's content: no times, checksum or write version (the store's, set on get and put). */
const timeless = (s: SessionState | undefined): unknown =>
  JSON.parse(
    JSON.stringify(s && { ...s, version: undefined }, (k, v) =>
      k === 'updatedAt' || k === 'at' || k === 'checksum' ? undefined : v,
    ) ?? 'null',
  );

describe('RedisSessionStore deltas (real redis)', () => {
  it('two replicas alternating calls of two growing sessions: the same outputs and states as over a memory store', async () => {
    // The reference is the same two replicas (pipelines keep per-process memos, and the prefix
    // diagnostics depend on them) sharing one memory store instead of Redis.
    const mem = new MemorySessionStore();
    const a = open();
    const b = open();
    const refA = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: mem });
    const refB = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: mem });
    const onA = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: a });
    const onB = createPipeline({ model: MODEL, tokenizer: 'qwen3', store: b });
    const runs = [requestsOf(randomSession(7, 36)), requestsOf(randomSession(8, 36))];
    let n = 0;
    for (let k = 0; k < 36; k++) {
      for (const run of [0, 1]) {
        const history = runs[run][k];
        if (!history) continue;
        const json = JSON.stringify(bodyOf(history));
        const c = ctx(n++, `delta-${run}`);
        // Session 0 alternates replicas every call, session 1 every third call.
        const first = run === 0 ? k % 2 === 0 : Math.floor(k / 3) % 2 === 0;
        const want = await (first ? refA : refB).process(JSON.parse(json) as ChatRequest, c);
        const got = await (first ? onA : onB).process(JSON.parse(json) as ChatRequest, c);
        const where = `run ${run} call ${k}`;
        expect(JSON.stringify(got.body), where).toBe(JSON.stringify(want.body));
        expect(got.receipts, where).toEqual(want.receipts);
        expect(got.prefix, where).toEqual(want.prefix);
        expect(got.blockHashes, where).toEqual(want.blockHashes);
      }
    }
    for (const id of ['delta-0', 'delta-1']) {
      const want = timeless(await mem.get('delta-t', id));
      expect(want, id).not.toBeNull();
      expect(timeless(await a.get('delta-t', id)), id).toEqual(want);
      expect(timeless(await b.get('delta-t', id)), id).toEqual(want);
      // A replica that never saw the session reads it whole, verified.
      expect(timeless(await open().get('delta-t', id)), id).toEqual(want);
    }
  }, 240_000);

  it('a put against a version another replica replaced is written whole over it: the last writer wins, never a mix', async () => {
    const a = open();
    const b = open();
    const base = grown('cas', 30);
    await a.put(base);
    const onB = (await b.get('delta-t', 'cas'))!;
    // Both change the same session from the same version; b writes first.
    const fromB = grown('cas', 31, 'b');
    const fromA = grown('cas', 32, 'a');
    expect(onB.calls).toBe(30);
    await b.put(fromB);
    await a.put(fromA);
    const c = open();
    expect(timeless(await c.get('delta-t', 'cas'))).toEqual(timeless(fromA));
    // b's next read sees a's state (its cached version is stale), then b wins in turn.
    expect(timeless(await b.get('delta-t', 'cas'))).toEqual(timeless(fromA));
    await b.put(grown('cas', 33, 'b'));
    expect(timeless(await a.get('delta-t', 'cas'))).toEqual(timeless(grown('cas', 33, 'b')));
    // Nothing left behind: the stored chunks are exactly the ones the head names.
    const raw = new Redis(url);
    const all = await raw.hgetall(redisKey('delta-t', 'cas'));
    const { ids } = parseHead(all.h, all.v);
    expect(
      Object.keys(all)
        .filter((f) => f !== 'v' && f !== 'h' && f !== 'n')
        .sort(),
    ).toEqual([...ids].sort());
    expect(ids.size).toBeGreaterThan(10);
    await raw.quit();
  });

  it('a growing 60-call session: call 40 sends under a quarter of the whole document, a read of an unchanged version almost nothing', async () => {
    const r = await relay();
    try {
      const writer = open({ url: r.url });
      const reader = open({ url: r.url });
      const perPut: number[] = [];
      const docs: number[] = [];
      for (let k = 1; k <= 60; k++) {
        const s = grown('grow', k);
        docs.push(Buffer.byteLength(documentOf(snapshotOf(structuredClone(s))).text));
        const before = r.sent();
        await writer.put(s);
        perPut.push(r.sent() - before);
      }
      expect(perPut[39]).toBeLessThan(docs[39] / 4);
      expect(perPut[59]).toBeLessThan(docs[59] / 4);
      // The first read transfers everything; an unchanged one only the version check.
      const down0 = r.received();
      expect((await reader.get('delta-t', 'grow'))?.calls).toBe(60);
      expect(r.received() - down0).toBeGreaterThan(docs[59] * 0.9);
      const down1 = r.received();
      expect((await reader.get('delta-t', 'grow'))?.calls).toBe(60);
      expect(r.received() - down1).toBeLessThan(200);
      // After one more write the reader fetches the head and the new chunks, not the whole state.
      await writer.put(grown('grow', 61));
      const down2 = r.received();
      expect(timeless(await reader.get('delta-t', 'grow'))).toEqual(timeless(grown('grow', 61)));
      expect(r.received() - down2).toBeLessThan(docs[59] / 4);
      // And the reader's own next put, made against the version it read, sends only what changed.
      const up3 = r.sent();
      await reader.put(grown('grow', 62));
      expect(r.sent() - up3).toBeLessThan(docs[59] / 4);
      expect(timeless(await writer.get('delta-t', 'grow'))).toEqual(timeless(grown('grow', 62)));
    } finally {
      r.close();
    }
  });

  it('reads a state of the old whole-document format once, then replaces it on the next put', async () => {
    const raw = new Redis(url);
    const old = grown('legacy', 12);
    const key = redisKey('delta-t', 'legacy');
    await raw.set(key, documentOf(snapshotOf(structuredClone(old))).text, 'EX', 60);
    const s = open();
    const got = (await s.get('delta-t', 'legacy'))!;
    expect(timeless(got)).toEqual(timeless(old));
    got.calls = 13;
    await s.put(got);
    expect(await raw.type(key)).toBe('hash');
    expect((await open().get('delta-t', 'legacy'))?.calls).toBe(13);
    // A tampered old document is still refused.
    const bad = JSON.parse(documentOf(snapshotOf(structuredClone(old))).text) as SessionState;
    bad.calls = 99;
    await raw.set(key, JSON.stringify(bad));
    expect(await open().get('delta-t', 'legacy')).toBeUndefined();
    await raw.quit();
  });

  it('a tampered chunk or head is treated as absent and logged; TTL and tenant scoping hold', async () => {
    const logs: string[] = [];
    const s = open({ log: (m) => logs.push(m), ttlSeconds: 90 });
    await s.put(grown('tamper', 20));
    const raw = new Redis(url);
    const key = redisKey('delta-t', 'tamper');
    const ttl = await raw.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(90);
    expect(await open().get('other', 'tamper')).toBeUndefined();
    const fields = (await raw.hkeys(key)).filter((f) => f !== 'v' && f !== 'h' && f !== 'n');
    expect(fields.length).toBeGreaterThan(3);
    const text = (await raw.hget(key, fields[1]))!;
    await raw.hset(
      key,
      fields[1],
      text.replace(/[0-9]/, (d) => String((Number(d) + 1) % 10)),
    );
    const fresh = open({ log: (m) => logs.push(m) });
    expect(await fresh.get('delta-t', 'tamper')).toBeUndefined();
    expect(logs.some((l) => /chunk does not match/.test(l))).toBe(true);
    const h = (await raw.hget(key, 'h'))!;
    await raw.hset(key, 'h', h.replace('"calls":20', '"calls":21'));
    expect(await open({ log: (m) => logs.push(m) }).get('delta-t', 'tamper')).toBeUndefined();
    expect(logs.some((l) => /head does not match/.test(l))).toBe(true);
    // A malformed head written with its matching version (a writer that is not this code).
    const bad = canonicalJson({
      p: { x: { d: { c: 5, a: [] }, v: 1 } },
      t: { calls: 1, schema: SESSION_SCHEMA_VERSION, sessionId: 'tamper', tenant: 'delta-t' },
    });
    await raw.hset(key, 'h', bad, 'v', createHash('sha256').update(bad).digest('hex').slice(0, CHUNK_ID_HEX));
    expect(await open({ log: (m) => logs.push(m) }).get('delta-t', 'tamper')).toBeUndefined();
    expect(logs.some((l) => /malformed part/.test(l))).toBe(true);
    await raw.quit();
  });
});

/** A state as the pipeline grows one: appended records, a map gaining keys, a ring, small parts. */
function grown(id: string, calls: number, tag = ''): SessionState {
  const msgs = Array.from({ length: calls * 2 }, (_, i) => ({
    role: i % 2 ? 'tool' : 'assistant',
    content: `${'line of output '.repeat(i % 2 ? 100 : 4)}#${i}`,
  }));
  return {
    schema: SESSION_SCHEMA_VERSION,
    tenant: 'delta-t',
    sessionId: id,
    model: 'm',
    rootHash: 'r'.repeat(64),
    calls,
    updatedAt: 1000 + calls,
    stages: {
      stabilise: {
        v: 1,
        s: {
          a: msgs.map((_, i) => `h${i}`.padEnd(64, 'a')),
          orig: Object.fromEntries(msgs.map((m, i) => [String(i), m])),
          bytes: calls * 1000,
        },
      },
      ledger: { v: 1, s: { observations: msgs.map((_, i) => ({ at: i, path: `src/f${i}.py`, tag })) } },
      breaks: { v: 1, s: Array.from({ length: Math.min(calls, 100) }, (_, i) => ({ call: calls - i, why: 'x' })) },
      volatile: { v: 3, s: { prev: tag, learned: [] } },
    },
  };
}
