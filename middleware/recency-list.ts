// What: an intrusive doubly linked list in recency order (head: least recently used), for LRU
// caches that must find their oldest item in O(1). A Map's first key is not O(1): V8 leaves a hole
// per deleted entry until the table is rebuilt, and iteration skips them, so `keys().next()` after
// evicting from the front costs O(entries evicted since the last rebuild).
// Complexity: push, unlink, touch O(1). A node is in at most one list at a time.

export interface Linked<N> {
  prev: N | undefined;
  next: N | undefined;
}

export class RecencyList<N extends Linked<N>> {
  head: N | undefined;
  tail: N | undefined;
  length = 0;

  /** Appends `n` as the most recently used. */
  push(n: N): void {
    n.prev = this.tail;
    n.next = undefined;
    if (this.tail === undefined) this.head = n;
    else this.tail.next = n;
    this.tail = n;
    this.length++;
  }

  /** Removes `n` (which must be in this list). */
  unlink(n: N): void {
    if (n.prev === undefined) this.head = n.next;
    else n.prev.next = n.next;
    if (n.next === undefined) this.tail = n.prev;
    else n.next.prev = n.prev;
    n.prev = undefined;
    n.next = undefined;
    this.length--;
  }

  /** Makes `n` (in this list) the most recently used. */
  touch(n: N): void {
    if (this.tail === n) return;
    this.unlink(n);
    this.push(n);
  }
}
