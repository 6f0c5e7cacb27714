// The gateway's request-body parser with memory: recent JSON bodies per tenant, so a body that
// extends an earlier one (an agent's next call) is parsed incrementally (incremental-parse.ts).
// The earlier body is found without any hint: each tenant's bodies are kept sorted bytewise, and
// the one sharing the longest prefix with a new body is next to where it would sort (binary search,
// each step one memcmp that stops at the first differing byte). A body that extends the one it was
// parsed against replaces it; forks and other sessions sit side by side.
// Bounded: at most `maxBytes` of raw bodies in all (least recently used dropped first) and
// `maxPerTenant` bodies per tenant; a tenant's bodies are only ever compared with its own. The
// parsed values kept are mostly the messages the session store keeps anyway.
// O(log bodies × common prefix) to find the earlier body, then incremental-parse.ts's cost.
import {
  commonPrefix,
  lastElementEnd,
  type ParseOutcome,
  parseAgainst,
  parseFull,
  type ParsedBody,
} from './incremental-parse.ts';

/** Raw bytes of bodies kept, all tenants together. */
export const DEFAULT_BODY_MEMO_BYTES = 32 * 1024 * 1024;
/** Bodies kept per tenant (~ concurrent sessions of one tenant that still find theirs). */
export const DEFAULT_BODY_MEMO_PER_TENANT = 2048;
/** Smaller bodies are parsed in full and not kept: JSON.parse takes a few microseconds there. */
export const BODY_MEMO_MIN_BYTES = 1024;

export interface BodyMemoOptions {
  maxBytes?: number;
  maxPerTenant?: number;
  minBytes?: number;
}

interface Kept {
  body: ParsedBody;
  tenant: string;
  size: number;
  /** When it was last used (a counter): a tenant over its cap drops its least recent body. */
  used: number;
}

export class BodyMemo {
  private readonly maxBytes: number;
  private readonly maxPerTenant: number;
  private readonly minBytes: number;
  /** Each tenant's bodies, sorted bytewise. */
  private readonly tenants = new Map<string, Kept[]>();
  /** Every kept body, least recently used first. */
  private readonly lru = new Set<Kept>();
  private bytes = 0;
  private clock = 0;

  constructor(o: BodyMemoOptions = {}) {
    this.maxBytes = o.maxBytes ?? DEFAULT_BODY_MEMO_BYTES;
    this.maxPerTenant = o.maxPerTenant ?? DEFAULT_BODY_MEMO_PER_TENANT;
    this.minBytes = o.minBytes ?? BODY_MEMO_MIN_BYTES;
  }

  /** Bodies and raw bytes kept (for tests and gauges). */
  get size(): { bodies: number; bytes: number } {
    return { bodies: this.lru.size, bytes: this.bytes };
  }

  /** JSON.parse(buf) (with the depth check), incrementally when the tenant sent a similar body before. */
  parse(tenant: string | undefined, buf: Buffer, maxDepth: number): ParseOutcome {
    if (tenant === undefined || buf.length < this.minBytes || buf.length > this.maxBytes / 4)
      return parseFull(buf, maxDepth, false);
    let list = this.tenants.get(tenant);
    if (list === undefined) this.tenants.set(tenant, (list = []));
    const { at, before, after } = search(list, buf);
    // The neighbours share the longest prefixes with it: take the longer (the earlier on a tie).
    const best = before >= after ? at - 1 : at;
    const common = Math.max(before, after);
    const prev = list[best];
    const out = (prev && parseAgainst(buf, prev.body, common, maxDepth)) ?? parseFull(buf, maxDepth, true);
    if (out.record === undefined) {
      if (prev !== undefined) this.touch(prev);
      if (list.length === 0) this.tenants.delete(tenant);
      return out;
    }
    const body = out.record;
    // A view into a larger buffer would keep all of it alive.
    const b = body.bytes;
    if (b.byteOffset !== 0 || b.buffer.byteLength !== b.length) body.bytes = Buffer.from(b);
    const k: Kept = { body, tenant, size: b.length, used: ++this.clock };
    this.bytes += k.size;
    this.lru.add(k);
    // The new body sorts between list[at - 1] and list[at]. When it extends the earlier one (every
    // element of the array it diverged in was reused), it takes that one's place, which keeps the
    // order; so does an identical body's.
    const same = list[at] !== undefined && list[at].body.bytes.length === b.length && list[at].body.bytes.equals(b);
    const slot = out.extended === true && prev !== undefined ? best : same ? at : -1;
    if (slot >= 0) {
      this.forget(list[slot]);
      list[slot] = k;
    } else list.splice(at, 0, k);
    // O(maxPerTenant), whatever the other tenants keep.
    if (list.length > this.maxPerTenant) this.drop(list.reduce((a, b) => (b.used < a.used ? b : a)));
    while (this.bytes > this.maxBytes) this.drop(this.lru.values().next().value as Kept);
    return out;
  }

  private touch(k: Kept): void {
    k.used = ++this.clock;
    this.lru.delete(k);
    this.lru.add(k);
  }

  /** Out of the LRU and the byte count (its tenant's list is the caller's). */
  private forget(k: Kept): void {
    if (this.lru.delete(k)) this.bytes -= k.size;
  }

  private drop(k: Kept): void {
    if (!this.lru.delete(k)) return;
    this.bytes -= k.size;
    const list = this.tenants.get(k.tenant);
    if (list === undefined) return;
    const i = list.indexOf(k);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.tenants.delete(k.tenant);
  }
}

/**
 * Where `buf` sorts in `list` (the first entry not below it), and its common prefix with the
 * entries before and after that point (0 where there is none). Every entry between two others
 * shares at least their smaller common prefix with `buf`, so each step compares from there on:
 * bodies that share a long system prompt are not compared over it again and again.
 */
function search(list: readonly Kept[], buf: Buffer): { at: number; before: number; after: number } {
  let lo = 0;
  let hi = list.length;
  let before = 0;
  let after = 0;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const e = list[mid].body;
    const c = commonPrefix(buf, e.bytes, Math.min(before, after), lastElementEnd(e));
    const below = c < buf.length && (c === e.bytes.length || buf[c] > e.bytes[c]);
    if (below) {
      lo = mid + 1;
      before = c;
    } else {
      hi = mid;
      after = c;
    }
  }
  return { at: lo, before: lo > 0 ? before : 0, after: lo < list.length ? after : 0 };
}
