// sglang_cache_aware (the 2024 SGLang router) against its own tests: the approximate radix tree's
// unit tests in sgl-project/sglang sgl-router/src/tree.rs (run sequentially here; the concurrent
// ones check the same results under threads), and the routing rule of sgl-router/src/router.rs
// select_generate_worker (imbalance → shortest queue; match rate > cache_threshold → the matched
// tenant; else the smallest tenant). Sizes are characters, as tenant_char_count counts them.
import { describe, expect, it } from 'vitest';
import { ApproxRadixTree } from '../../kvplanner/approx-radix-tree.ts';
import { SGLANG_DEFAULTS, SglangCacheAwarePolicy } from '../../kvplanner/policies/sglang-cache-aware.ts';
import { info, workers } from './fixtures.ts';

/** get_used_size_per_tenant, computed independently: one character per distinct non-empty prefix
 *  of what the tenant still holds (each of its strings up to where its own path ends). */
function computedSize(tree: ApproxRadixTree, tenant: string, strings: readonly string[]): number {
  const prefixes = new Set<string>();
  for (const s of strings) {
    const held = tree.matchFor(s, tenant);
    for (let i = 1; i <= held; i++) prefixes.add(s.slice(0, i));
  }
  return prefixes.size;
}

describe('sgl-router/src/tree.rs', () => {
  it('test_cold_start: nothing matches an empty tree', () => {
    expect(new ApproxRadixTree().prefixMatch('hello')).toEqual({ matchedChars: 0, tenant: undefined });
  });

  it('test_exact_match_seq / test_partial_match_concurrent / test_utf8_split_seq', () => {
    const t = new ApproxRadixTree();
    const pairs: Array<[string, string]> = [
      ['hello', 'tenant1'],
      ['apple', 'tenant2'],
      ['banana', 'tenant3'],
      ['你好嗎', 'tenant4'],
      ['你好喔', 'tenant5'],
      ['你心情好嗎', 'tenant6'],
    ];
    for (const [text, tenant] of pairs) t.insert(text, tenant);
    for (const [text, tenant] of pairs) expect(t.prefixMatch(text)).toEqual({ matchedChars: text.length, tenant });
    const one = new ApproxRadixTree();
    for (const text of ['apple', 'apabc', 'acbdeds']) one.insert(text, 'tenant0');
    for (const text of ['apple', 'apabc', 'acbdeds'])
      expect(one.prefixMatch(text)).toEqual({ matchedChars: text.length, tenant: 'tenant0' });
  });

  // test_utf8_split_seq's point ("indexed and split by a utf-8 value basis instead of byte basis")
  // outside the BMP: an emoji is one char (two UTF-16 units), never split between nodes
  it('test_utf8_split_seq beyond the BMP: an emoji is one character, never split', () => {
    const t = new ApproxRadixTree();
    t.insert('😀a', 'tenant1');
    t.insert('😁b', 'tenant2'); // shares its high surrogate with 😀, not a character
    expect([t.size('tenant1'), t.size('tenant2')]).toEqual([2, 2]);
    expect(t.prefixMatch('😀a')).toEqual({ matchedChars: 2, tenant: 'tenant1' });
    expect(t.prefixMatch('😁x')).toEqual({ matchedChars: 1, tenant: 'tenant2' });
    expect(t.matchFor('😁b', 'tenant1')).toBe(0);
    t.insert('x😀y', 'tenant3');
    t.insert('x😁z', 'tenant3'); // the split after "x" keeps both emoji whole
    expect(t.size('tenant3')).toBe(1 + 2 + 2);
    expect([t.matchFor('x😀y', 'tenant3'), t.matchFor('x😂', 'tenant3')]).toEqual([3, 1]);
    t.evictBySize(1);
    expect(t.size('tenant3')).toBe(1);
  });

  it('test_group_prefix_insert_match_concurrent: each shared prefix matches in full, on its tenant', () => {
    const prefixes = [
      "Clock strikes midnight, I'm still wide awake",
      'Got dreams bigger than these city lights',
      'Time waits for no one, gotta make my move',
      "Started from the bottom, that's no metaphor",
    ];
    const suffixes = [
      "Got too much to prove, ain't got time to lose",
      "History in the making, yeah, you can't erase this",
    ];
    const t = new ApproxRadixTree();
    prefixes.forEach((p, i) => {
      for (const s of suffixes) t.insert(`${p} ${s}`, `tenant${i}`);
    });
    prefixes.forEach((p, i) => expect(t.prefixMatch(p)).toEqual({ matchedChars: p.length, tenant: `tenant${i}` }));
  });

  it('test_get_used_size_per_tenant / test_prefix_match_tenant: shared nodes count once per tenant', () => {
    const t = new ApproxRadixTree();
    t.insert('hello', 'tenant1');
    t.insert('world', 'tenant1');
    t.insert('hello', 'tenant2');
    t.insert('help', 'tenant2');
    t.insert('你好', 'tenant3');
    expect(['tenant1', 'tenant2', 'tenant3'].map((x) => t.size(x))).toEqual([10, 6, 2]); // "hello" + "p"
    const u = new ApproxRadixTree();
    u.insert('hello', 'tenant1');
    u.insert('hello', 'tenant2');
    u.insert('hello world', 'tenant2');
    u.insert('help', 'tenant1');
    u.insert('helicopter', 'tenant2');
    const m = (text: string, tenant: string) => u.matchFor(text, tenant);
    expect([m('hello', 'tenant1'), m('help', 'tenant1'), m('hel', 'tenant1')]).toEqual([5, 4, 3]);
    expect([m('hello world', 'tenant1'), m('helicopter', 'tenant1')]).toEqual([5, 3]);
    expect([m('hello world', 'tenant2'), m('helicopter', 'tenant2'), m('help', 'tenant2')]).toEqual([11, 10, 3]);
    expect([m('hello', 'tenant3'), m('help', 'tenant3')]).toEqual([0, 0]);
  });

  it('test_tenant_char_count: the maintained count equals the computed one through inserts and an eviction', () => {
    const t = new ApproxRadixTree();
    const sent: Record<string, string[]> = { tenant1: [], tenant2: [] };
    const add = (text: string, tenant: string) => {
      t.insert(text, tenant);
      sent[tenant].push(text);
    };
    const check = () => {
      for (const tenant of ['tenant1', 'tenant2']) expect(t.size(tenant)).toBe(computedSize(t, tenant, sent[tenant]));
    };
    for (const x of ['apple', 'apricot', 'banana']) add(x, 'tenant1');
    for (const x of ['amplify', 'application']) add(x, 'tenant2');
    check();
    expect([t.size('tenant1'), t.size('tenant2')]).toEqual([16, 17]);
    add('apartment', 'tenant1');
    add('appetite', 'tenant2');
    add('ball', 'tenant1');
    add('box', 'tenant2');
    check();
    for (const x of ['zebra', 'zero']) {
      add(x, 'tenant1');
      add(x, 'tenant2');
    }
    check();
    t.evictBySize(10);
    check();
    expect(t.size('tenant1')).toBeLessThanOrEqual(10);
    expect(t.size('tenant2')).toBeLessThanOrEqual(10);
  });

  it('test_simple_eviction: the oversize tenant loses its least recently used leaf, the other is untouched', () => {
    const t = new ApproxRadixTree();
    t.insert('hello', 'tenant1');
    t.insert('hello', 'tenant2');
    t.insert('world', 'tenant2');
    expect([t.size('tenant1'), t.size('tenant2')]).toEqual([5, 10]);
    t.evictBySize(5);
    expect([t.size('tenant1'), t.size('tenant2')]).toEqual([5, 5]);
    expect(t.prefixMatch('world')).toEqual({ matchedChars: 5, tenant: 'tenant2' });
    expect(t.matchFor('hello', 'tenant2')).toBe(0);
    expect(t.matchFor('hello', 'tenant1')).toBe(5);
  });

  it('test_simple_tenant_eviction / test_complex_tenant_eviction: remove_tenant leaves the others intact', () => {
    const t = new ApproxRadixTree();
    for (const x of ['apple', 'application', 'banana']) t.insert(x, 'tenant1');
    for (const x of ['apple', 'appetite', 'banana', 'ball']) t.insert(x, 'tenant2');
    t.removeTenant('tenant1');
    expect(t.tenants()).toEqual(['tenant2']);
    for (const x of ['apple', 'application', 'banana']) expect(t.matchFor(x, 'tenant1')).toBe(0);
    for (const x of ['apple', 'appetite', 'banana', 'ball']) expect(t.matchFor(x, 'tenant2')).toBe(x.length);
    expect(t.size('tenant2')).toBe(5 + 5 + 6 + 2); // "apple" + "etite" + "banana" + "ll"
  });
});

describe('sgl-router/src/router.rs select_generate_worker (cache_threshold 0.5, abs 32, rel 1.0001)', () => {
  it("the router README's Configuration Parameters defaults (launch_router --help of 2024)", () => {
    expect(SGLANG_DEFAULTS).toEqual({
      cache_threshold: 0.5,
      balance_abs_threshold: 32,
      balance_rel_threshold: 1.0001,
      eviction_interval_secs: 60,
      max_tree_size: 16_777_216,
    });
  });

  // test_get_smallest_tenant's sizes as the workers' trees (tenant1..4 = w0..w3): 6, 3, 2 and
  // "hi" + "hello" = 6 characters ("h" shared); a miss goes to the smallest: w2 (tenant3)
  it('a match rate ≤ cache_threshold goes to the smallest tenant (test_get_smallest_tenant sizes)', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    for (const [text, w] of [
      ['ap', 'w0'],
      ['icot', 'w0'],
      ['cat', 'w1'],
      ['do', 'w2'],
      ['hi', 'w3'],
      ['hello', 'w3'],
    ])
      p.tree.insert(text, w);
    expect(['w0', 'w1', 'w2', 'w3'].map((w) => p.tree.size(w))).toEqual([6, 3, 2, 6]);
    const c = p.select(workers(4), info({ text: 'zzzz' }))!;
    expect(c).toMatchObject({ branch: 'smallest_tree' });
    expect(c.worker.id).toBe('w2');
  });

  it('the rate is matched ÷ text characters, strictly above the threshold', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    const home = p.select(ws, info({ text: 'hello world' }))!.worker.id;
    // "hello there" shares "hello " (6 of 11 = 0.545 > 0.5) → the same worker
    expect(p.select(ws, info({ text: 'hello there' }))!).toMatchObject({
      branch: 'prefix_match',
      worker: { id: home },
    });
    // "help me" shares "hel" (3 of 7 = 0.43) → the smallest tree, not the match
    const miss = p.select(ws, info({ text: 'help me' }))!;
    expect(miss.branch).toBe('smallest_tree');
    expect(miss.worker.id).not.toBe(home);
    // exactly half ("abcd" of "abcdwxyz" after "abcd" was routed) is not above 0.5
    const q = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const first = q.select(ws, info({ text: 'abcd' }))!.worker.id;
    const half = q.select(ws, info({ text: 'abcdwxyz' }))!;
    expect(half.branch).toBe('smallest_tree');
    expect(half.worker.id).not.toBe(first);
  });

  it('the rate counts characters as Rust does: "😀x" against "😀a" is 1 of 2 = 0.5, not above the threshold', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(2);
    const home = p.select(ws, info({ text: '😀a' }))!.worker.id;
    const c = p.select(ws, info({ text: '😀x' }))!;
    expect(c.branch).toBe('smallest_tree'); // UTF-16 units would read 2 of 3 = 0.67
    expect(c.worker.id).not.toBe(home);
  });

  it('imbalance needs both (max − min) > 32 and max > min · 1.0001; the text is still inserted', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    const home = p.select(ws, info({ text: 'shared system prompt' }))!.worker;
    home.inFlight = 33;
    const idle = ws.find((w) => w !== home)!;
    for (const w of ws) if (w !== home) w.inFlight = w === idle ? 0 : 1;
    const c = p.select(ws, info({ text: 'shared system prompt, turn 2' }))!;
    expect(c).toMatchObject({ branch: 'balance', worker: { id: idle.id } });
    expect(p.tree.matchFor('shared system prompt, turn 2', idle.id)).toBe(28);
    // 32 − 0 is not > 32: cache affinity again (the deepest match is turn 2's path, on `idle`)
    home.inFlight = 32;
    expect(p.select(ws, info({ text: 'shared system prompt, turn 3' }))!).toMatchObject({
      branch: 'prefix_match',
      worker: { id: idle.id },
    });
  });
});
