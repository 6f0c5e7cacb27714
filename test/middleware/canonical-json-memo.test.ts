// canonicalJson remembers the text of deep-frozen values (session-state parts) in a WeakMap. V8
// drops a dead value's entry at a full GC but never shrinks the table, so values frozen and written
// between two full GCs (each call's new parts, under the Redis store's encode) left a table the size
// of that burst for the process's life. The memo starts afresh every MEMO_GENERATION values: the
// table stays bounded. Read from V8's heap spaces after full GCs (no timing); texts unchanged.
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { canonicalJson, MEMO_GENERATION } from '../../middleware/canonical-json.ts';
import { freezeDeep } from '../../middleware/deep-freeze.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MB = 2 ** 20;
const largeObjectBytes = (): number =>
  getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space')!.space_used_size;

const part = (b: number, i: number) =>
  freezeDeep({ role: 'tool', content: [{ type: 'text', text: `r${b}-${i}` }], tool_call_id: `c${i}` });

describe('canonical JSON memo', () => {
  it('a burst of short-lived frozen values leaves no table of its size once they are collected', () => {
    gc();
    gc();
    const before = largeObjectBytes();
    // 150k values, three frozen objects each: 450k remembered texts, all dead by the GC below
    for (let b = 0; b < 15; b++) {
      const batch = Array.from({ length: 10_000 }, (_, i) => part(b, i));
      for (const v of batch) canonicalJson(v);
    }
    gc();
    gc();
    // one table of 450k entries is ~16 MB (16 bytes an entry, room for twice the entries)
    expect((largeObjectBytes() - before) / MB).toBeLessThan(4);
  });

  it('writes the same text before and after the memo starts afresh', () => {
    const v = part(-1, -1);
    const text = '{"content":[{"text":"r-1--1","type":"text"}],"role":"tool","tool_call_id":"c-1"}';
    expect(canonicalJson(v)).toBe(text);
    for (let i = 0; i < MEMO_GENERATION; i++) canonicalJson(freezeDeep({ i }));
    expect(canonicalJson(v)).toBe(text);
    expect(canonicalJson({ a: v, b: [v] })).toBe(`{"a":${text},"b":[${text}]}`);
  });
});
