// The contract both engine caches implement, so the server never knows which flavour runs.
// A request's life: begin(prompt) at admission (match + insert + lock), finish(lease, output)
// when it completes (insert what was generated, unlock). Locked data is never evicted.

export interface CacheLease {
  /** Prompt tokens the engine would serve from cache (reported as cached_tokens). */
  readonly cachedTokens: number;
}

export interface PrefixCacheStats {
  /** Tokens looked up (prompt tokens of every request), as vLLM's prefix_cache_queries counts. */
  queries: number;
  /** Of those, tokens served from cache. */
  hits: number;
  evictions: number;
}

export interface PrefixCache {
  readonly kind: 'block' | 'radix';
  /** `salt` namespaces the prompt (vLLM `cache_salt`, SGLang `extra_key`): equal prompts under
   *  different salts never share cached tokens. */
  begin(prompt: ArrayLike<number>, salt?: string): CacheLease;
  /** `output` is the generated ids; the engine keeps all but the last (never fed back). */
  finish(lease: CacheLease, output: ArrayLike<number>): void;
  /** Fraction of capacity holding tokens (cached or running), 0..1. */
  usage(): number;
  /** Drops every unlocked entry (vLLM /reset_prefix_cache, SGLang /flush_cache). */
  flush(): void;
  stats(): PrefixCacheStats;
}

/** Engines always recompute at least the last prompt token: it must produce the first logits. */
export function maxCacheable(promptLen: number): number {
  return Math.max(0, promptLen - 1);
}
