// The body memo's memory: a body is kept only once its route accepted it, and what is kept is
// charged its bytes plus its parsed objects (counted by the member scan). Rejected bodies, big or
// many-element, must leave the memo empty (its own accounting, not a heap measurement).
import { afterEach, describe, expect, it } from 'vitest';
import { BODY_MEMO_CONTAINER_BYTES, BODY_MEMO_ELEMENT_BYTES, BodyMemo } from '../../gateway/body/body-memo.ts';
import { startRig, type TestRig } from '../helpers/gateway.ts';

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Arrays and objects in a parsed value, counted independently of the scan. */
function containers(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let n = 1;
  for (const x of Array.isArray(v) ? v : Object.values(v)) n += containers(x);
  return n;
}

/** What the memo should charge for keeping `text`: bytes, containers, top-level array elements. */
function charge(text: string): number {
  const v = JSON.parse(text) as Record<string, unknown>;
  let elements = 0;
  for (const x of Object.values(v)) if (Array.isArray(x)) elements += x.length;
  return Buffer.byteLength(text) + BODY_MEMO_CONTAINER_BYTES * containers(v) + BODY_MEMO_ELEMENT_BYTES * elements;
}

const message = (i: number): string =>
  JSON.stringify({
    role: i % 2 ? 'assistant' : 'user',
    content: [{ type: 'text', text: `turn ${i} ${'x'.repeat(300)}` }],
  });
const chat = (n: number, extra = ''): string =>
  `{"model":"m1","messages":[${Array.from({ length: n }, (_, i) => message(i)).join(',')}]${extra}}`;

describe('body memo memory', () => {
  it('keeps only what keep() is given, charged bytes plus parsed objects; over maxElements nothing', () => {
    const memo = new BodyMemo({ maxElements: 50 });
    // Parsed, never accepted: nothing kept, however often.
    for (let i = 0; i < 3; i++) expect(memo.parse('t', Buffer.from(chat(20)), 64).pending).toBeDefined();
    expect(memo.size).toEqual({ bodies: 0, bytes: 0 });
    // Accepted: charged exactly what the parsed objects count, also when parsed incrementally.
    const a = chat(10, ',"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]');
    memo.keep(memo.parse('t', Buffer.from(a), 64).pending);
    expect(memo.size).toEqual({ bodies: 1, bytes: charge(a) });
    const b = chat(12, ',"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]');
    const ob = memo.parse('t', Buffer.from(b), 64);
    expect(ob.reused).toBeGreaterThan(0);
    memo.keep(ob.pending);
    // b extends a, so it takes its place.
    expect(memo.size).toEqual({ bodies: 1, bytes: charge(b) });
    const c = chat(3);
    memo.keep(memo.parse('u', Buffer.from(c), 64).pending);
    expect(memo.size).toEqual({ bodies: 2, bytes: charge(b) + charge(c) });
    // 51 elements in all (messages and another array): refused.
    const big = chat(41, `,"stop":[${Array.from({ length: 10 }, () => '"s"').join(',')}]`);
    memo.keep(memo.parse('v', Buffer.from(big), 64).pending);
    expect(memo.size).toEqual({ bodies: 2, bytes: charge(b) + charge(c) });
  });

  it('a body of many small arrays is charged for them: the charge, not the raw bytes, meets the cap', () => {
    const memo = new BodyMemo({ maxBytes: 4_000_000, maxElements: 1_000_000 });
    const text = `{"model":"m1","messages":[{"role":"user","content":[${'[],'.repeat(99_999)}[]]}]}`;
    expect(text.length).toBeLessThan(4_000_000 / 4);
    memo.keep(memo.parse('t', Buffer.from(text), 64).pending);
    // 300 KB of raw bytes charged ~8 MB: over a quarter of the cap, so not kept.
    expect(charge(text)).toBeGreaterThan(4_000_000 / 4);
    expect(memo.size).toEqual({ bodies: 0, bytes: 0 });
  });

  it("one tenant cannot flush another's bodies: each keeps at most its share, its own least recent dropped first (review s25 F4)", () => {
    const memo = new BodyMemo({ maxBytes: 400_000, maxPerTenant: 100 });
    const b = chat(20);
    memo.keep(memo.parse('b', Buffer.from(b), 64).pending);
    const a = (s: number) =>
      `{"model":"m1","messages":[{"role":"user","content":"session ${s} ${'y'.repeat(30_000)}"}]}`;
    for (let s = 0; s < 40; s++) {
      memo.keep(memo.parse('a', Buffer.from(a(s)), 64).pending);
      // a holds its most recent bodies within its share (a quarter of 400 KB), b keeps its own
      let own = 0;
      let n = 0;
      for (let t = s; t >= 0 && own + charge(a(t)) <= 100_000; t--, n++) own += charge(a(t));
      expect(memo.size).toEqual({ bodies: 1 + n, bytes: charge(b) + own });
    }
    expect(memo.parse('b', Buffer.from(chat(21)), 64).reused).toBeGreaterThan(0);
  });

  it('over its body count a tenant drops its least recently used body', () => {
    const memo = new BodyMemo({ maxPerTenant: 3 });
    const c = (s: string, n: number) => chat(n).replace('turn 0', `turn 0 of ${s}`);
    for (const s of ['p', 'q', 'r']) memo.keep(memo.parse('c', Buffer.from(c(s, 4)), 64).pending);
    // p is used again (parsed against, not kept), then a fourth body comes: q, the least recent, goes
    expect(memo.parse('c', Buffer.from(c('p', 5)), 64).reused).toBeGreaterThan(0);
    memo.keep(memo.parse('c', Buffer.from(c('s', 4)), 64).pending);
    expect(memo.size.bodies).toBe(3);
    expect(memo.parse('c', Buffer.from(c('p', 5)), 64).reused).toBeGreaterThan(0);
    expect(memo.parse('c', Buffer.from(c('q', 5)), 64).reused).toBe(0);
    expect(memo.parse('c', Buffer.from(c('r', 5)), 64).reused).toBeGreaterThan(0);
  });

  it('through the gateway: rejected big bodies and other routes leave nothing kept; an accepted one is kept', async () => {
    rig = await startRig({
      config: { limits: { max_messages: 1000 } },
      model: { tokenizer: 'qwen3', layout: 'ctxgate' },
    });
    const memo = rig.gw.ctx.bodies;
    const post = async (path: string, body: string): Promise<number> =>
      (
        await fetch(`${rig!.gw.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
      ).status;
    // More entries than max_messages (each `[]`, not a message): 400, and about 1.5 MB each.
    const arrays = `{"model":"m1","messages":[${'[],'.repeat(499_999)}[]]}`;
    // Elements that are not messages, under max_messages.
    const numbers = `{"model":"m1","messages":[${Array.from({ length: 900 }, (_, i) => `${i}${' '.repeat(1000)}`).join(',')}]}`;
    // A valid shape for a model that does not exist.
    const unknown = chat(200).replace('"m1"', '"nope"');
    for (let i = 0; i < 2; i++) {
      expect(await post('/v1/chat/completions', arrays)).toBe(400);
      expect(await post('/v1/chat/completions', numbers)).toBe(400);
      expect(await post('/v1/chat/completions', unknown)).toBe(404);
      expect(await post('/v1/embeddings', chat(200))).not.toBe(200);
    }
    expect(memo.size).toEqual({ bodies: 0, bytes: 0 });
    const ok = chat(20);
    expect(await post('/v1/chat/completions', ok)).toBe(200);
    expect(memo.size).toEqual({ bodies: 1, bytes: charge(ok) });
  });

  it('under layout: passthrough an accepted body is not kept (nothing reuses its objects)', async () => {
    rig = await startRig({ config: { limits: { max_messages: 1000 } } });
    const memo = rig.gw.ctx.bodies;
    const ok = chat(20);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${rig.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: ok,
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(memo.size).toEqual({ bodies: 0, bytes: 0 });
  });
});
