// Precise per-worker block index fed by engine KV cache events (vLLM BlockStored / BlockRemoved /
// AllBlocksCleared): what each worker's prefix cache holds, not what routing guessed. A thin layer
// over PrefixIndex with no capacity of its own (removals come as events), so the policies read it
// with the same matchLength / matchAll as their approximate indexes. Cost: O(1) Map operations per
// stored or removed block; clear O(blocks of that worker).
import { PrefixIndex } from '../prefix-index.ts';

/** Capacity large enough that the index never evicts by itself: events say what left. */
const UNBOUNDED_BLOCKS = 2 ** 40;

export class KvEventIndex {
  readonly index = new PrefixIndex(UNBOUNDED_BLOCKS);
  stored = 0;
  removed = 0;

  /** Blocks became cached on `workerId`: one BlockStored batch, a chain segment in order (what
   *  vLLM publishes per request step), inserted as a chain: O(log n + new blocks). */
  blockStored(workerId: string, hashes: readonly string[]): void {
    if (hashes.length === 0) return;
    this.index.insert(workerId, hashes, false);
    this.stored += hashes.length;
  }

  blockRemoved(workerId: string, hashes: readonly string[]): void {
    this.removed += this.index.evict(workerId, hashes, false);
  }

  allCleared(workerId: string): void {
    this.index.removeWorker(workerId);
  }
}

/** The precise index a policy was given (option `kv_index`), if any. */
export function preciseIndexOption(opts: Record<string, unknown>): KvEventIndex | undefined {
  const v = opts.kv_index;
  if (v === undefined || v === null) return undefined;
  if (!(v instanceof KvEventIndex))
    throw new Error(
      "routing option 'kv_index' must be a KvEventIndex (set by the gateway or the simulator, not in config)",
    );
  return v;
}
