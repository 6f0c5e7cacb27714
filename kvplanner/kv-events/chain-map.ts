// Maps one engine's opaque block hashes onto the gateway's own chain hashes (block-hash.ts), so
// the precise index is keyed exactly like the chains routing looks up. vLLM's hashes cannot be
// recomputed outside the engine (a pickled tuple under a per-process random seed), but each
// BlockStored carries the token ids of its blocks and the parent's engine hash: the gateway hashes
// those ids itself, chained from the parent's gateway hash, or, for a chain's first block, from the
// seed of the request's cache salt (vLLM puts it in block 0's extra_keys), exactly as the
// middleware seeds the request's chain. A block whose parent was never seen (stored before the
// gateway listened, or after a gap) cannot be placed and is counted as unmapped. Only the main
// attention group on the GPU tier counts (other media and groups are skipped).
// Engine blocks of another size (SGLang publishes one BlockStored per radix page, `page_size`
// tokens, 1 by default) are merged or split into the gateway's blocks: each engine page keeps
// the gateway hash of the last whole gateway block at or before its end, how many tokens past
// that boundary it ends (fewer than one block, found through its parent pages), and the gateway
// blocks it completed. A gateway block is held while the page holding its last token is (a radix
// cache drops leaves first), so removing a page removes the blocks it completed.
// The map holds at most `maxBlocks` blocks' worth of tokens (an engine that never reports
// evictions cannot grow it without bound): past that the oldest-stored page is dropped, as
// though removed. Cost: one SHA-256 per gateway block; O(block size) per completed block to
// gather its tokens through the parent pages; O(1) Map operations per removal.
import { hashBlock, hashSeed } from '../block-hash.ts';
import type { EngineHash, KvEvent } from './wire.ts';

export interface MapStats {
  stored: number;
  removed: number;
  /** Stored blocks whose parent chain was unknown here. */
  unmapped: number;
  /** Events skipped: another medium or attention group, or token ids that do not fit the hashes. */
  skipped: number;
}

/** Media of a block on the device (vLLM writes "GPU"; older versions and SGLang may omit it). */
const DEVICE_MEDIA = new Set(['GPU', 'gpu', 'device']);

/** The cache salt of a chain's first block, from vLLM's extra keys (the tuple's string members
 *  other than the LoRA name; multimodal and embedding keys are not strings). */
export function saltOf(extraKeys: ReadonlyArray<unknown[] | null> | null, loraName: string | null): string | undefined {
  const first = extraKeys?.[0];
  if (!first) return undefined;
  const strings = first.filter((k): k is string => typeof k === 'string' && k !== loraName);
  return strings.length ? strings[strings.length - 1] : undefined;
}

/** An engine block (page) that does not end on a gateway block boundary, or is not one block. */
interface Page {
  /** gateway hash of the last whole gateway block at or before the page's end (or the chain seed) */
  last: string;
  /** tokens between that boundary and the page's end (< blockSize) */
  tailLen: number;
  /** the page's own token ids */
  tokens: number[];
  /** the parent page (its tokens complete this page's tail) */
  prev: Page | undefined;
  /** gateway blocks whose last token lies in this page */
  completed: string[];
}

/** A page aligned with the gateway's blocks is just that block's gateway hash. */
type Entry = string | Page;

const asPage = (e: Entry): Page =>
  typeof e === 'string' ? { last: e, tailLen: 0, tokens: [], prev: undefined, completed: [e] } : e;

export class EngineChainMap {
  /** engine hash -> gateway chain hash of the same block, or the page's merge state */
  private readonly map = new Map<EngineHash, Entry>();
  /** tokens the mapped pages hold (the bound) */
  private tokens = 0;
  readonly stats: MapStats = { stored: 0, removed: 0, unmapped: 0, skipped: 0 };

  constructor(
    readonly blockSize: number,
    readonly maxBlocks: number = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.map.size;
  }

  /** Gateway hashes of every block the engine holds, as far as the events told. */
  *blocks(): IterableIterator<string> {
    for (const e of this.map.values()) {
      if (typeof e === 'string') yield e;
      else yield* e.completed;
    }
  }

  private entryTokens(e: Entry): number {
    return typeof e === 'string' ? this.blockSize : e.tokens.length;
  }

  private set(h: EngineHash, e: Entry): string[] | undefined {
    const had = this.map.get(h);
    if (had !== undefined) this.tokens -= this.entryTokens(had);
    this.map.set(h, e);
    this.tokens += this.entryTokens(e);
    let dropped: string[] | undefined;
    while (this.tokens > this.maxBlocks * this.blockSize && this.map.size > 1) {
      const [oldest, gone] = this.map.entries().next().value as [EngineHash, Entry];
      this.map.delete(oldest);
      this.tokens -= this.entryTokens(gone);
      (dropped ??= []).push(...(typeof gone === 'string' ? [gone] : gone.completed));
    }
    return dropped;
  }

  /** The last `n` tokens ending at `p`'s end, through its parent pages (n < blockSize). */
  private tail(p: Page, n: number): number[] {
    const parts: number[][] = [];
    for (let cur: Page | undefined = p; n > 0 && cur; cur = cur.prev) {
      const take = Math.min(n, cur.tokens.length);
      parts.push(cur.tokens.slice(cur.tokens.length - take));
      n -= take;
    }
    return parts.reverse().flat();
  }

  /** The page after `parent` holding `tokens`: the gateway blocks it completes, hashed. */
  private extend(parent: Page, tokens: number[]): Page {
    const bs = this.blockSize;
    const total = parent.tailLen + tokens.length;
    // the parent is needed only while this page's tail reaches into it: chains are cut at every
    // block boundary, so a page never keeps more than one block's worth of ancestors alive
    const prev = parent.tailLen > 0 ? parent : undefined;
    if (total < bs) return { last: parent.last, tailLen: total, tokens, prev, completed: [] };
    const all = prev ? [...this.tail(prev, prev.tailLen), ...tokens] : tokens;
    const completed: string[] = [];
    let last = parent.last;
    let at = 0;
    for (; at + bs <= all.length; at += bs) {
      last = hashBlock(last, all, at, at + bs);
      completed.push(last);
    }
    // the tail lies within this page's own tokens (a block was completed in it)
    return { last, tailLen: all.length - at, tokens, prev: undefined, completed };
  }

  /** BlockStored of another block size than the gateway's: page by page. */
  private storePages(ev: Extract<KvEvent, { type: 'BlockStored' }>): { stored?: string[]; removed?: string[] } {
    const n = ev.blockHashes.length;
    const ps = ev.blockSize;
    if (!(ps >= 1) || n === 0 || ev.tokenIds.length > n * ps || ev.tokenIds.length <= (n - 1) * ps) {
      this.stats.skipped++;
      return {};
    }
    const parentEntry =
      ev.parentBlockHash === null
        ? hashSeed(ev.cacheSalt ?? saltOf(ev.extraKeys, ev.loraName))
        : this.map.get(ev.parentBlockHash);
    if (parentEntry === undefined) {
      this.stats.unmapped += n;
      return {};
    }
    let parent = asPage(parentEntry);
    const stored: string[] = [];
    let dropped: string[] | undefined;
    for (let i = 0; i < n; i++) {
      const page = this.extend(parent, ev.tokenIds.slice(i * ps, Math.min((i + 1) * ps, ev.tokenIds.length)));
      const d = this.set(ev.blockHashes[i], page);
      if (d) (dropped ??= []).push(...d);
      stored.push(...page.completed);
      parent = page;
    }
    this.stats.stored += stored.length;
    return dropped ? { stored, removed: dropped } : { stored };
  }

  /**
   * Applies one event; returns the gateway hashes it added or removed (in chain order), or
   * 'cleared' for AllBlocksCleared.
   */
  apply(ev: KvEvent): { stored?: string[]; removed?: string[]; cleared?: true } {
    if (ev.type === 'AllBlocksCleared') {
      this.clear();
      return { cleared: true };
    }
    if ((ev.medium !== null && !DEVICE_MEDIA.has(ev.medium)) || (ev.groupIdx !== null && ev.groupIdx !== 0)) {
      this.stats.skipped++;
      return {};
    }
    if (ev.type === 'BlockRemoved') {
      const removed: string[] = [];
      for (const h of ev.blockHashes) {
        const gw = this.map.get(h);
        if (gw === undefined) continue;
        this.map.delete(h);
        this.tokens -= this.entryTokens(gw);
        if (typeof gw === 'string') removed.push(gw);
        else removed.push(...gw.completed);
      }
      this.stats.removed += removed.length;
      return { removed };
    }
    const bs = ev.blockSize;
    if (bs !== this.blockSize || ev.tokenIds.length !== ev.blockHashes.length * bs) return this.storePages(ev);
    const parentEntry =
      ev.parentBlockHash === null
        ? hashSeed(ev.cacheSalt ?? saltOf(ev.extraKeys, ev.loraName))
        : this.map.get(ev.parentBlockHash);
    if (parentEntry === undefined) {
      this.stats.unmapped += ev.blockHashes.length;
      return {};
    }
    // a parent page that ends inside a gateway block (mixed sizes on one engine): page by page
    if (typeof parentEntry !== 'string' && parentEntry.tailLen > 0) return this.storePages(ev);
    let parent = typeof parentEntry === 'string' ? parentEntry : parentEntry.last;
    const stored: string[] = [];
    let dropped: string[] | undefined;
    for (let i = 0; i < ev.blockHashes.length; i++) {
      parent = hashBlock(parent, ev.tokenIds, i * bs, (i + 1) * bs);
      const d = this.set(ev.blockHashes[i], parent);
      if (d) (dropped ??= []).push(...d);
      stored.push(parent);
    }
    this.stats.stored += stored.length;
    return dropped ? { stored, removed: dropped } : { stored };
  }

  clear(): void {
    this.map.clear();
    this.tokens = 0;
  }
}
