// An LRUCache bounded by entry count without lru-cache's own `max`: given `max`, lru-cache
// allocates every slot up front (key, value, next and prev arrays, and TTL and size arrays when
// used): measured for an empty cache of max 1,000,000, 52 MB of heap and array buffers (+41 MB RSS)
// with TTL and sizes (the local store), ~24 MB of heap with sizes (the Redis read cache). Both are
// sized quota × configured tenants (10,000 × tenants by default), so every configured tenant cost
// ~0.8 MB before it had a session. Without `max` (bounded by maxSize) lru-cache's arrays grow with the
// entries held; setWithin drops the least recently used entries past the count, as `max` did.
// Complexity: O(1) per set (plus O(1) per entry dropped).
import type { LRUCache } from 'lru-cache';

/** lru.set(key, value), then the least recently used entries dropped while more than `max` are held. */
export function setWithin<K extends {}, V extends {}>(lru: LRUCache<K, V>, max: number, key: K, value: V): void {
  lru.set(key, value);
  while (lru.size > max) lru.pop();
}
