// Precise per-worker block index fed by engine KV cache events (vLLM BlockStored / BlockRemoved /
// AllBlocksCleared): what each worker's prefix cache holds, not what routing guessed. A thin layer
// over PrefixIndex with no capacity of its own (removals come as events), so the policies read it
// with the same matchLength / matchAll as their approximate indexes.
// Per worker the index is precise (default) or guessed: a worker whose event stream is not in step
// (not yet joined, stale, reconnecting) is guessed, and the policy then keeps that worker's entry
// itself, as it does without events (insert at selection, evict on feedback), bounded by the
// worker's KV capacity. When the stream is back in step, the entry is rebuilt from the blocks the
// events say the engine holds (precise()). Cost: O(1) Map operations per stored or removed block;
// clear and rebuild O(blocks of that worker); guessed() one Set lookup.
import { PrefixIndex } from '../prefix-index.ts';

/** Capacity large enough that the index never evicts by itself: events say what left. */
const UNBOUNDED_BLOCKS = 2 ** 40;

export class KvEventIndex {
  readonly index = new PrefixIndex(UNBOUNDED_BLOCKS);
  stored = 0;
  removed = 0;
  /** Workers routed on the policy's own guesses for now (their events are not in step). */
  private readonly guessing = new Set<string>();

  /** Blocks became cached on `workerId`: one BlockStored batch, a chain segment in order (what
   *  vLLM publishes per request step), inserted as a chain: O(log n + new blocks). */
  blockStored(workerId: string, hashes: readonly string[]): void {
    if (hashes.length === 0 || this.guessing.has(workerId)) return;
    this.index.insert(workerId, hashes, false);
    this.stored += hashes.length;
  }

  blockRemoved(workerId: string, hashes: readonly string[]): void {
    if (this.guessing.has(workerId)) return;
    this.removed += this.index.evict(workerId, hashes, false);
  }

  allCleared(workerId: string): void {
    if (this.guessing.has(workerId)) return;
    this.index.removeWorker(workerId);
  }

  /** Whether any worker's entry is guessed (a policy skips the per-worker check when none is). */
  anyGuessed(): boolean {
    return this.guessing.size > 0;
  }

  /** Whether routing keeps this worker's entry itself (no event stream in step). */
  guessed(workerId: string): boolean {
    return this.guessing.size > 0 && this.guessing.has(workerId);
  }

  /**
   * The worker's events are not (or no longer) in step: the policy guesses its cache from here on.
   * The entry keeps what the events last said, bounded by `capacityBlocks` (LRU) from now on.
   */
  guess(workerId: string, capacityBlocks: number): void {
    if (this.guessing.has(workerId)) return;
    this.guessing.add(workerId);
    this.index.setCapacity(workerId, capacityBlocks);
  }

  /**
   * The worker's events are in step again: its entry becomes exactly `blocks` (what the events say
   * the engine holds; each block hash stands for its whole prefix, so order does not matter).
   */
  precise(workerId: string, blocks: Iterable<string>): void {
    this.guessing.delete(workerId);
    this.index.removeWorker(workerId);
    this.index.setCapacity(workerId, UNBOUNDED_BLOCKS);
    const one: string[] = [''];
    for (const h of blocks) {
      one[0] = h;
      this.index.insert(workerId, one, false, 0);
    }
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
