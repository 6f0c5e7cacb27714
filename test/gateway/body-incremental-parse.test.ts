// The incremental body parse (gateway/body/) gives exactly JSON.parse's result and error, reuses
// the earlier body's parsed values for the bytes two bodies share, and stays within its bounds.
import { describe, expect, it } from 'vitest';
import { BodyMemo } from '../../gateway/body/body-memo.ts';
import { commonPrefix, parseFull } from '../../gateway/body/incremental-parse.ts';
import { scanMembers } from '../../gateway/body/json-members.ts';

const DEPTH = 32;

/** Same value as JSON.parse gives: key order, prototypes, -0, everything. */
function same(a: unknown, b: unknown, path = '$'): void {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    if (!Object.is(a, b)) throw new Error(`${path}: ${String(a)} !== ${String(b)}`);
    return;
  }
  if (Array.isArray(a) !== Array.isArray(b)) throw new Error(`${path}: array vs object`);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) throw new Error(`${path}: prototype differs`);
  const ka = Object.getOwnPropertyNames(a);
  const kb = Object.getOwnPropertyNames(b);
  if (ka.join('\u0000') !== kb.join('\u0000')) throw new Error(`${path}: keys ${ka} vs ${kb}`);
  for (const k of ka) same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
}

/** What the gateway did before: the depth check, then JSON.parse. */
function reference(buf: Buffer): { error?: string; value?: unknown } {
  const r = parseFull(buf, DEPTH, false);
  return r.error ? { error: r.error } : { value: r.value };
}

function expectExact(memo: BodyMemo, tenant: string, text: string | Buffer): ReturnType<BodyMemo['parse']> {
  const buf = typeof text === 'string' ? Buffer.from(text) : text;
  const got = memo.parse(tenant, buf, DEPTH);
  memo.keep(got.pending);
  const want = reference(buf);
  expect(got.error).toBe(want.error);
  if (!want.error) same(got.value, want.value);
  return got;
}

/** A fixed-seed generator: the same bodies on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  'plain text',
  'quote " and backslash \\ and \\" escaped',
  'unicode é ü 中文 🙂 \u2028 \u0000 \u001f',
  '</think> {"nested":"json"} [1,2]',
  'x'.repeat(300),
];
const NUMBERS = ['0', '-0', '1.0', '1e400', '-1e-400', '12345678901234567890', '3.141592653589793', '0.1e1'];

/** Random JSON text (not via JSON.stringify: odd numbers, whitespace, escapes, duplicate keys). */
function randomJson(r: () => number, depth: number): string {
  const x = r();
  if (depth <= 0 || x < 0.35) {
    const y = r();
    if (y < 0.4) return JSON.stringify(STRINGS[Math.floor(r() * STRINGS.length)] + Math.floor(r() * 100));
    if (y < 0.5) return '"\\u00e9\\ud83d\\ude42\\n\\/"';
    if (y < 0.8) return NUMBERS[Math.floor(r() * NUMBERS.length)];
    return ['true', 'false', 'null'][Math.floor(r() * 3)];
  }
  const n = Math.floor(r() * 4);
  const sp = r() < 0.2 ? ' \n\t' : '';
  const parts: string[] = [];
  if (x < 0.65) {
    for (let i = 0; i < n; i++) parts.push(randomJson(r, depth - 1));
    return `[${sp}${parts.join(`${sp},${sp}`)}${sp}]`;
  }
  const keys = ['role', 'content', 'a', '__proto__', 'constructor', 'k\\u0065y', 'dup', 'dup', '中'];
  for (let i = 0; i < n; i++)
    parts.push(`"${keys[Math.floor(r() * keys.length)]}"${sp}:${sp}${randomJson(r, depth - 1)}`);
  return `{${sp}${parts.join(`,${sp}`)}${sp}}`;
}

function randomMessage(r: () => number, i: number): string {
  const extra = r() < 0.5 ? `,"x":${randomJson(r, 3)}` : '';
  return `{"role":"${i % 2 ? 'assistant' : 'user'}","content":${JSON.stringify(STRINGS[i % STRINGS.length].repeat(20) + i)}${extra}}`;
}

function chatBody(
  messages: string[],
  tail = ',"tools":[{"type":"function","function":{"name":"read"}}],"max_tokens":16',
): string {
  return `{"model":"m","messages":[${messages.join(',')}]${tail}}`;
}

describe('incremental body parse', () => {
  it('a growing session: every call equals JSON.parse and reuses the earlier call objects', () => {
    const memo = new BodyMemo();
    const r = rng(1);
    const messages = Array.from({ length: 6 }, (_, i) => randomMessage(r, i));
    let prev: unknown[] | undefined;
    let prevTools: unknown;
    for (let call = 0; call < 20; call++) {
      messages.push(randomMessage(r, messages.length), randomMessage(r, messages.length + 1));
      const got = expectExact(memo, 't', chatBody(messages)) as { value: Record<string, unknown[]>; reused: number };
      const now = got.value.messages;
      if (prev) {
        expect(got.reused).toBeGreaterThan(0);
        for (let i = 0; i < prev.length; i++) expect(now[i]).toBe(prev[i]);
        expect(now[prev.length]).not.toBe(undefined);
        // tools follow the messages: equal bytes, so the same object too
        expect(got.value.tools).toBe(prevTools);
      }
      prev = now;
      prevTools = got.value.tools;
    }
    // each call replaced the one it extended
    expect(memo.size.bodies).toBe(1);
  });

  it('random bodies and random one-byte changes give JSON.parse result or error', () => {
    const r = rng(7);
    const memo = new BodyMemo({ minBytes: 0 });
    let hits = 0;
    for (let round = 0; round < 300; round++) {
      const messages: string[] = ['{"role":"user","content":"the task"}'];
      const n = Math.floor(r() * 6);
      for (let i = 0; i < n; i++) messages.push(randomJson(r, 4));
      const tail = r() < 0.5 ? `,"z":${randomJson(r, 3)}` : `,"dup":1,"dup":${randomJson(r, 2)}`;
      const head = r() < 0.3 ? `"tools":${randomJson(r, 3)},` : '';
      const base = `{${head}"model":"m","messages":[${messages.join(',')}]${tail}}`;
      const tenant = `t${round % 3}`;
      expectExact(memo, tenant, base);
      // the next call: more messages, or one byte changed anywhere (valid or not)
      const more = `{${head}"model":"m","messages":[${[...messages, randomJson(r, 3)].join(',')}]${tail}}`;
      const got = expectExact(memo, tenant, more);
      if (got.reused) hits++;
      const bytes = Buffer.from(base);
      const at = Math.floor(r() * bytes.length);
      const flip = Buffer.from(bytes);
      flip[at] = ' {}[],:"\\0a1e-.tnu'.charCodeAt(Math.floor(r() * 19));
      expectExact(memo, tenant, flip);
      expectExact(memo, tenant, bytes);
    }
    expect(hits).toBeGreaterThan(100);
  });

  it('a one-byte difference inside a resent message is parsed, not reused', () => {
    const memo = new BodyMemo();
    const r = rng(3);
    const messages = Array.from({ length: 12 }, (_, i) => randomMessage(r, i));
    const a = expectExact(memo, 't', chatBody(messages)) as { value: Record<string, unknown[]> };
    const edited = messages.slice();
    edited[4] = edited[4].replace('user', 'usEr');
    const b = expectExact(memo, 't', chatBody([...edited, randomMessage(r, 12)])) as {
      value: Record<string, { role: string }[]>;
    };
    for (let i = 0; i < 4; i++) expect(b.value.messages[i]).toBe(a.value.messages[i]);
    expect(b.value.messages[4]).not.toBe(a.value.messages[4]);
    expect(b.value.messages[4].role).toBe('usEr');
    // a number cut short: "16" then "160" must not read as 16
    expectExact(memo, 't', chatBody([...edited, '16']));
    const c = expectExact(memo, 't', chatBody([...edited, '160'])) as {
      value: { messages: unknown[] };
      reused: number;
    };
    expect(c.reused).toBeGreaterThan(0);
    expect(c.value.messages.at(-1)).toBe(160);
  });

  it('a duplicate or __proto__ key after the shared bytes still parses as JSON.parse does', () => {
    const memo = new BodyMemo();
    const r = rng(5);
    const messages = Array.from({ length: 10 }, (_, i) => randomMessage(r, i));
    expectExact(memo, 't', chatBody(messages));
    const dup = expectExact(
      memo,
      't',
      chatBody([...messages, randomMessage(r, 10)], ',"messages":[{"role":"user"}]'),
    ) as {
      value: { messages: unknown[] };
    };
    expect(dup.value.messages).toEqual([{ role: 'user' }]);
    const proto = expectExact(
      memo,
      't',
      chatBody([...messages, randomMessage(r, 11)], ',"__proto__":{"polluted":1}'),
    ) as {
      value: Record<string, unknown>;
    };
    expect(Object.getPrototypeOf(proto.value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBe(undefined);
  });

  it('the depth limit holds for nesting added after the shared bytes', () => {
    const memo = new BodyMemo();
    const r = rng(9);
    const messages = Array.from({ length: 10 }, (_, i) => randomMessage(r, i));
    expectExact(memo, 't', chatBody(messages));
    const deep = `{"role":"user","content":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`;
    expect(expectExact(memo, 't', chatBody([...messages, deep])).error).toBe('depth');
    const ok = `{"role":"user","content":${'['.repeat(DEPTH - 3)}${']'.repeat(DEPTH - 3)}}`;
    expect(expectExact(memo, 't', chatBody([...messages, ok])).error).toBe(undefined);
    expect(expectExact(memo, 't', chatBody([...messages, '{"role":'])).error).toBe('json');
  });

  it('two sessions that share only their system prompt do not share its object', () => {
    const memo = new BodyMemo();
    const system = JSON.stringify({ role: 'system', content: 'be brief '.repeat(300) });
    const task = (t: string): string => JSON.stringify({ role: 'user', content: t });
    const a = expectExact(memo, 't', chatBody([system, task('task A')])) as { value: Record<string, unknown[]> };
    const b = expectExact(memo, 't', chatBody([system, task('task B')])) as { value: Record<string, unknown[]> };
    expect(b.value.messages[0]).not.toBe(a.value.messages[0]);
    // the same task (a fork, or a retry) does
    const c = expectExact(memo, 't', chatBody([system, task('task A'), task('more')])) as {
      value: Record<string, unknown[]>;
    };
    expect(c.value.messages[0]).toBe(a.value.messages[0]);
    expect(c.value.messages[1]).toBe(a.value.messages[1]);
  });

  it('tenants never share parsed objects, and memory stays under its caps', () => {
    const memo = new BodyMemo({ maxBytes: 200_000, maxPerTenant: 4 });
    const r = rng(11);
    const messages = Array.from({ length: 20 }, (_, i) => randomMessage(r, i));
    const a = expectExact(memo, 'a', chatBody(messages)) as { value: Record<string, unknown[]> };
    const b = expectExact(memo, 'b', chatBody(messages)) as { value: Record<string, unknown[]>; reused: number };
    expect(b.reused).toBe(0);
    expect(b.value.messages[0]).not.toBe(a.value.messages[0]);
    for (let s = 0; s < 40; s++) {
      const own = [`{"role":"user","content":"session ${s}"}`, ...messages];
      expectExact(memo, s % 2 ? 'a' : 'c', chatBody(own));
      expect(memo.size.bytes).toBeLessThanOrEqual(200_000);
    }
    expect(memo.size.bodies).toBeLessThanOrEqual(8);
  });

  it('the member scan finds the members and elements JSON.parse reads', () => {
    const text = ' { "a" : [ 1 , {"b":"]"} ,"c\\"" ] , "k\\u0065y":"v", "n":-1e5 } ';
    const buf = Buffer.from(text);
    const m = scanMembers(buf)!;
    expect(m.map((x) => x.key)).toEqual(['a', 'key', 'n']);
    expect(JSON.parse(text.slice(m[0].vs, m[0].ve))).toEqual([1, { b: ']' }, 'c"']);
    const e = m[0].elems!;
    expect(text.slice(e[2], e[3])).toBe('{"b":"]"}');
    expect(text.slice(m[2].vs, m[2].ve)).toBe('-1e5');
    expect(scanMembers(Buffer.from('[1]'))).toBe(undefined);
    expect(commonPrefix(Buffer.from('x'.repeat(5000) + 'ab'), Buffer.from('x'.repeat(5000) + 'ac'))).toBe(5001);
  });
});
