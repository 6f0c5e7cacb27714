// A chain's 64-bit keys (kvplanner/hash-keys.ts, RouteInfo.blockKeys): the index reads them instead
// of the hash strings and must give exactly the answers it gives without them. hashKeys against a
// BigInt parse; matchAll / matchLength with and without keys over generated insert / evict / clear
// / removeWorker sequences (holes included, one slot then up to 70: the masks off, then one to
// three words wide), over hex hashes mixed with strings the table keeps under ids of their own;
// ctxgate's decisions with and without blockKeys on the same stream (index_stride 1 and 4).
import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { hashKeys, NOT_A_KEY } from '../../kvplanner/hash-keys.ts';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import type { RouteInfo } from '../../kvplanner/types.ts';
import { tokens, workers } from './fixtures.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

const hex = (r: () => number): string =>
  Array.from({ length: 16 }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('');

/** A block name: mostly a canonical hash, sometimes one read by its string (see hash-keys.ts). */
function blockName(r: () => number): string {
  const x = r();
  if (x < 0.9) return hex(r);
  if (x < 0.93) return `ffffffff${hex(r).slice(8)}`; // high word all ones
  if (x < 0.95) return hex(r).toUpperCase();
  if (x < 0.97) return hex(r).slice(1);
  if (x < 0.98) return `${hex(r).slice(0, 15)}g`;
  return `${hex(r).slice(0, 15)}\u00e9`;
}

/** Chains over one root, branching into conversations, some forked again. */
function chains(r: () => number, count: number): string[][] {
  const root = Array.from({ length: 6 }, () => blockName(r));
  const out: string[][] = [];
  for (let c = 0; c < count; c++) {
    const parent = c > 0 && r() < 0.3 ? out[Math.floor(r() * out.length)] : root;
    const cut = Math.min(parent.length, root.length + Math.floor(r() * (parent.length - root.length + 1)));
    const len = 1 + Math.floor(r() * 40);
    out.push([...parent.slice(0, cut), ...Array.from({ length: len }, () => blockName(r))]);
  }
  return out;
}

describe('hashKeys', () => {
  it('a canonical hash is the 64-bit number it spells; any other string reads NOT_A_KEY', () => {
    const r = rng(3);
    const names = Array.from({ length: 2000 }, () => blockName(r));
    names.push('0000000000000000', 'fffffffeffffffff', 'ffffffff00000000', '', 'x', '00000000000000000');
    const keys = hashKeys(names);
    expect(keys.length).toBe(2 * names.length);
    let canonical = 0;
    names.forEach((h, i) => {
      const lo = keys[2 * i];
      const hi = keys[2 * i + 1];
      if (/^[0-9a-f]{16}$/.test(h) && !h.startsWith('ffffffff')) {
        canonical++;
        expect(((BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)).toString(16).padStart(16, '0')).toBe(h);
      } else expect([lo, hi]).toEqual([0, NOT_A_KEY]);
    });
    expect(canonical).toBeGreaterThan(1700);
  });
});

function runSequence(seed: number, holes: boolean): number {
  const r = rng(seed);
  const pool = chains(r, 60);
  const keyOf = new Map(pool.map((c) => [c, hashKeys(c)]));
  const idx = new PrefixIndex(holes ? 2 ** 40 : 300);
  let workers = 1;
  const a: number[] = [];
  const b: number[] = [];
  let checks = 0;
  const wrong: string[] = [];
  for (let step = 0; step < 1500; step++) {
    if (step % 25 === 24 && workers < 70) workers += 6;
    const w = `w${Math.floor(r() * workers)}`;
    const c = pool[Math.floor(r() * pool.length)];
    const op = r();
    if (op < 0.6) idx.insert(w, c.slice(0, 1 + Math.floor(r() * c.length)));
    else if (op < 0.9 && holes)
      idx.evict(
        w,
        c.filter(() => r() < 0.3),
      );
    else if (op < 0.97) idx.clear(w);
    else idx.removeWorker(w);
    if (step % 5 !== 0) continue;
    for (const q of pool.slice(0, 20)) {
      const keys = keyOf.get(q) as Int32Array;
      for (const cut of [q.length, 1 + Math.floor(r() * q.length)]) {
        const qq = q.slice(0, cut);
        const kk = keys.subarray(0, 2 * cut);
        a.length = b.length = idx.slotCount();
        a.fill(-1);
        b.fill(-2);
        idx.matchAll(qq, a);
        idx.matchAll(qq, b, 0, kk);
        if (a.join() !== b.join()) wrong.push(`step ${step} matchAll ${a.join()} vs ${b.join()}`);
        for (let s = 0; s < idx.slotCount(); s++) {
          const id = idx.idOfSlot(s) as string;
          const hint = Math.floor(r() * (cut + 2));
          const plain = idx.matchLength(id, qq, hint);
          if (idx.matchLength(id, qq, hint, kk) !== plain) wrong.push(`step ${step} ${id} hint ${hint}`);
          checks++;
        }
      }
    }
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(idx.slotCount()).toBeGreaterThan(64);
  return checks;
}

describe('PrefixIndex reads by keys', () => {
  it('matchAll and matchLength answer the same with and without the chain keys (holes)', () => {
    for (const seed of [1, 2]) expect(runSequence(seed, true)).toBeGreaterThan(20_000);
  });

  it('the same under an LRU-bounded index (its own evictions)', () => {
    for (const seed of [3, 4]) expect(runSequence(seed, false)).toBeGreaterThan(20_000);
  });
});

describe('ctxgate with RouteInfo.blockKeys', () => {
  for (const stride of [1, 4])
    it(`decides as without them (index_stride ${stride})`, () => {
      const r = rng(7 + stride);
      const plain = new CtxgatePolicy({ index_stride: stride, default_kv_tokens: 40_000 });
      const keyed = new CtxgatePolicy({ index_stride: stride, default_kv_tokens: 40_000 });
      const ws = workers(6);
      const turns = new Map<number, number>();
      const picks: string[] = [];
      let differ = 0;
      for (let i = 0; i < 1500; i++) {
        const s = Math.floor(r() * 40);
        const t = (turns.get(s) ?? 0) + 1;
        turns.set(s, t);
        const ids = tokens(256, s, 64 * t + Math.floor(r() * 40));
        const hashes = blockHashes(ids, 16);
        // some calls without a session, some whose keys do not cover the chain (read by strings)
        const sessionId = r() < 0.15 ? undefined : `s${s}`;
        const keys = r() < 0.05 ? hashKeys(hashes).subarray(2) : hashKeys(hashes);
        const base: RouteInfo = { model: 'm', tenant: 't', sessionId, blockHashes: hashes, promptTokens: ids.length };
        const w = ws.map((x) => ({ ...x, inFlight: Math.floor(r() * 3) }));
        const p = plain.select(w, base);
        const k = keyed.select(w, { ...base, blockKeys: keys });
        if (
          p?.worker.id !== k?.worker.id ||
          p?.branch !== k?.branch ||
          p?.predictedCachedTokens !== k?.predictedCachedTokens
        )
          differ++;
        picks.push(`${p?.branch}`);
        if (p && k && r() < 0.5) {
          plain.observe({ workerId: p.worker.id, info: base, ok: true, reportedCachedTokens: p.predictedCachedTokens });
          keyed.observe({ workerId: k.worker.id, info: base, ok: true, reportedCachedTokens: k.predictedCachedTokens });
        }
      }
      expect(differ).toBe(0);
      // the stream reaches the branches that read the index by keys
      expect(new Set(picks).size).toBeGreaterThanOrEqual(3);
    });
});
