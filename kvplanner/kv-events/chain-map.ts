// Maps one engine's opaque block hashes onto the gateway's own chain hashes (block-hash.ts), so
// the precise index is keyed exactly like the chains routing looks up. vLLM's hashes cannot be
// recomputed outside the engine (a pickled tuple under a per-process random seed), but each
// BlockStored carries the token ids of its blocks and the parent's engine hash: the gateway hashes
// those ids itself, chained from the parent's gateway hash, or, for a chain's first block, from the
// seed of the request's cache salt (vLLM puts it in block 0's extra_keys), exactly as the
// middleware seeds the request's chain. A block whose parent was never seen (stored before the
// gateway listened, or after a gap) cannot be placed and is counted as unmapped. Only the main
// attention group on the GPU tier counts (other media and groups are skipped), and only events of
// the gateway's block size. The map holds at most `maxBlocks` (an engine that never reports
// evictions cannot grow it without bound): past that the oldest-stored block is dropped, as
// though removed. Cost: one SHA-256 per stored block; O(1) Map operations per removal.
import { hashBlock, hashSeed } from '../block-hash.ts';
import type { EngineHash, KvEvent } from './wire.ts';

export interface MapStats {
  stored: number;
  removed: number;
  /** Stored blocks whose parent chain was unknown here. */
  unmapped: number;
  /** Events skipped: another block size, medium or attention group. */
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

export class EngineChainMap {
  /** engine hash -> gateway chain hash of the same block */
  private readonly map = new Map<EngineHash, string>();
  readonly stats: MapStats = { stored: 0, removed: 0, unmapped: 0, skipped: 0 };

  constructor(
    readonly blockSize: number,
    readonly maxBlocks: number = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.map.size;
  }

  /** Gateway hashes of every block the engine holds, as far as the events told. */
  blocks(): IterableIterator<string> {
    return this.map.values();
  }

  /**
   * Applies one event; returns the gateway hashes it added or removed (in chain order), or
   * 'cleared' for AllBlocksCleared.
   */
  apply(ev: KvEvent): { stored?: string[]; removed?: string[]; cleared?: true } {
    if (ev.type === 'AllBlocksCleared') {
      this.map.clear();
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
        removed.push(gw);
      }
      this.stats.removed += removed.length;
      return { removed };
    }
    const bs = ev.blockSize;
    if (bs !== this.blockSize || ev.tokenIds.length !== ev.blockHashes.length * bs) {
      this.stats.skipped++;
      return {};
    }
    let parent: string | undefined =
      ev.parentBlockHash === null
        ? hashSeed(ev.cacheSalt ?? saltOf(ev.extraKeys, ev.loraName))
        : this.map.get(ev.parentBlockHash);
    if (parent === undefined) {
      this.stats.unmapped += ev.blockHashes.length;
      return {};
    }
    const stored: string[] = [];
    let dropped: string[] | undefined;
    for (let i = 0; i < ev.blockHashes.length; i++) {
      parent = hashBlock(parent, ev.tokenIds, i * bs, (i + 1) * bs);
      this.map.set(ev.blockHashes[i], parent);
      stored.push(parent);
      if (this.map.size > this.maxBlocks) {
        const [oldest, gw] = this.map.entries().next().value as [EngineHash, string];
        this.map.delete(oldest);
        (dropped ??= []).push(gw);
      }
    }
    this.stats.stored += stored.length;
    return dropped ? { stored, removed: dropped } : { stored };
  }

  clear(): void {
    this.map.clear();
  }
}
