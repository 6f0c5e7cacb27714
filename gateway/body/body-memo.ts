// The gateway's request-body parser with memory: recent JSON bodies per tenant, so a body that
// extends an earlier one (an agent's next call) is parsed incrementally (incremental-parse.ts).
// The earlier body is found without any hint: each tenant's bodies are kept sorted bytewise, and
// the one sharing the longest prefix with a new body is next to where it would sort (binary search,
// each step one memcmp that stops at the first differing byte). A body that extends the one it was
// parsed against replaces it; forks and other sessions sit side by side.
// A body is parsed here but kept only when the route accepted it (`keep`, called after the
// adapter and the request-shape check, on routes that run a pipeline): a rejected body, or one
// sent to any other route, is never kept.
// Bounded: at most `maxBytes` charged in all (least recently used dropped first), at most
// `maxTenantBytes` (a quarter of it by default) per tenant, its own least recent dropped first, so
// one tenant cannot flush the others', and `maxPerTenant` bodies per tenant (O(1) to find its
// least recent); a tenant's bodies are only ever compared with its own. A body
// is charged its raw bytes plus what its parsed objects and offsets cost, counted by the member
// scan (BODY_MEMO_CONTAINER_BYTES per array or object, BODY_MEMO_ELEMENT_BYTES per array element);
// one with more array elements than `maxElements` (limits.max_messages) is not kept.
// A body is compared and kept up to its last `}` (head): the closing brace is never part of a
// reusable value, and the request path may then splice the upstream body's additions (the tenant's
// `cache_salt`) over that brace in place, in the same allocation, without copying a body the memo
// holds (proxy/body.ts).
// O(log bodies × common prefix) to find the earlier body, then incremental-parse.ts's cost.
import {
  commonPrefix,
  lastElementEnd,
  type ParseOutcome,
  parseAgainst,
  parseFull,
  type ParsedBody,
} from './incremental-parse.ts';
import { BODY_ROOM } from './read-body.ts';

/**
 * Bytes charged for bodies kept, all tenants together (each body: its raw bytes plus its parsed
 * objects, bodyCharge). Not charged: the Anthropic and Responses adapters' translation memos
 * (WeakMaps keyed by kept objects, freed with them, gateway/ingress/). For each kept message they
 * hold a chat message and its parts or tool calls (1-4 small objects per source item, vs the 80
 * bytes charged per source container), and new strings only where the adapter builds one (a tool
 * input's JSON, joined text parts, a `[tool error]` prefix, a custom call's JSON), each about the
 * size of the item's raw JSON; texts passed through are shared. So a kept Anthropic or Responses
 * body can take up to about twice its charge (more for bodies of many tiny calls), a chat body
 * its charge: with those routes the memo's memory is up to ~2x this figure (an estimate read from
 * the adapters, not a heap measurement).
 */
export const DEFAULT_BODY_MEMO_BYTES = 32 * 1024 * 1024;
/** Bodies kept per tenant (~ concurrent sessions of one tenant that still find theirs). */
export const DEFAULT_BODY_MEMO_PER_TENANT = 2048;
/** Smaller bodies are parsed in full and not kept: JSON.parse takes a few microseconds there. */
export const BODY_MEMO_MIN_BYTES = 1024;
/** Charged per array or object kept: its parsed object (V8: ~30-90 bytes measured with `[]`/`{}`). */
export const BODY_MEMO_CONTAINER_BYTES = 80;
/** Charged per top-level array element kept: its two offsets, its slot in the copy, and in the array. */
export const BODY_MEMO_ELEMENT_BYTES = 24;
/** Array elements a kept body may hold, all arrays together (the gateway passes limits.max_messages). */
export const DEFAULT_BODY_MEMO_ELEMENTS = 10_000;

export interface BodyMemoOptions {
  maxBytes?: number;
  maxPerTenant?: number;
  minBytes?: number;
  maxElements?: number;
  /** Charged bytes one tenant may hold (default maxBytes / 4). */
  maxTenantBytes?: number;
}

/** A body parsed and not yet kept; `BodyMemo.keep` keeps it. */
export interface PendingBody {
  tenant: string;
  body: ParsedBody;
  /** The body it was parsed against, and whether it extends it. */
  prev: Kept | undefined;
  extended: boolean;
  /** Where it sorts in its tenant's list, valid while the memo's version is unchanged. */
  at: number;
  best: number;
  version: number;
  /** Set by `keep` (a second keep of the same pending body does nothing). */
  kept?: true;
}

export type MemoOutcome = ParseOutcome & { pending?: PendingBody };

/** What keeping `body` is charged, or undefined when it holds more than `maxElements` elements. */
export function bodyCharge(body: ParsedBody, maxElements: number): number | undefined {
  let containers = 1;
  let elements = 0;
  for (const m of body.members) {
    containers += m.c;
    if (m.elems !== undefined) elements += m.elems.length / 2;
  }
  if (elements > maxElements) return undefined;
  return body.bytes.length + BODY_MEMO_CONTAINER_BYTES * containers + BODY_MEMO_ELEMENT_BYTES * elements;
}

export interface Kept {
  body: ParsedBody;
  tenant: string;
  size: number;
}

/** A tenant's kept bodies, least recently used first, and what they are charged. */
interface Share {
  recent: Set<Kept>;
  bytes: number;
}

export class BodyMemo {
  private readonly maxBytes: number;
  private readonly maxPerTenant: number;
  private readonly minBytes: number;
  private readonly maxElements: number;
  private readonly maxTenantBytes: number;
  private readonly shares = new Map<string, Share>();
  /** Each tenant's bodies, sorted bytewise. */
  private readonly tenants = new Map<string, Kept[]>();
  /** Every kept body, least recently used first. */
  private readonly lru = new Set<Kept>();
  private bytes = 0;
  /** Bumped whenever a tenant list changes: a pending body's sort position is then searched again. */
  private version = 0;

  constructor(o: BodyMemoOptions = {}) {
    this.maxBytes = o.maxBytes ?? DEFAULT_BODY_MEMO_BYTES;
    this.maxPerTenant = o.maxPerTenant ?? DEFAULT_BODY_MEMO_PER_TENANT;
    this.minBytes = o.minBytes ?? BODY_MEMO_MIN_BYTES;
    this.maxElements = o.maxElements ?? DEFAULT_BODY_MEMO_ELEMENTS;
    this.maxTenantBytes = o.maxTenantBytes ?? this.maxBytes / 4;
  }

  /** Bodies kept and the bytes they are charged (for tests and gauges). */
  get size(): { bodies: number; bytes: number } {
    return { bodies: this.lru.size, bytes: this.bytes };
  }

  /** JSON.parse(buf) (with the depth check), incrementally when the tenant sent a similar body before.
   * `pending` is set when the body could be kept: pass it to `keep` once the route accepted it. */
  parse(tenant: string | undefined, buf: Buffer, maxDepth: number): MemoOutcome {
    if (tenant === undefined || buf.length < this.minBytes || buf.length > this.maxBytes / 4)
      return parseFull(buf, maxDepth, false);
    const list = this.tenants.get(tenant) ?? NONE;
    const { at, before, after } = search(list, head(buf));
    // The neighbours share the longest prefixes with it: take the longer (the earlier on a tie).
    const best = before >= after ? at - 1 : at;
    const common = Math.max(before, after);
    const prev = list[best];
    const out: MemoOutcome = (prev && parseAgainst(buf, prev.body, common, maxDepth)) ?? parseFull(buf, maxDepth, true);
    if (prev !== undefined) this.touch(prev);
    if (out.record === undefined) return out;
    out.pending = {
      tenant,
      body: out.record,
      prev,
      extended: out.extended === true,
      at,
      best,
      version: this.version,
    };
    return out;
  }

  /**
   * Keeps a body `parse` returned as pending (the route accepted it). Returns whether the memo may
   * now hold the pending body's bytes before its last `}` as given (then nobody may write those;
   * from the brace on they are the caller's), false when it holds nothing of them (a copy, or not
   * kept).
   */
  keep(p: PendingBody | undefined): boolean {
    if (p === undefined || p.kept) return false;
    p.kept = true;
    // Charged for the whole body as received (the brace and any whitespace after it included).
    const size = bodyCharge(p.body, this.maxElements);
    if (size === undefined || size > this.maxBytes / 4 || size > this.maxTenantBytes) return false;
    const body = p.body;
    // A view into a larger buffer would keep all of it alive. The BODY_ROOM spare bytes a body is
    // read with (read-body.ts) stay with it, not charged: at most 6 % of a body that has its own
    // allocation (4 KiB and up; smaller ones are views into Node's shared pool, copied here).
    const b = body.bytes;
    let holds = true;
    if (b.byteOffset !== 0 || b.buffer.byteLength - b.length > BODY_ROOM) {
      body.bytes = Buffer.from(head(b));
      holds = false;
    } else body.bytes = head(b);
    let list = this.tenants.get(p.tenant);
    if (list === undefined) this.tenants.set(p.tenant, (list = []));
    let { at, best } = p;
    if (p.version !== this.version) {
      const s = search(list, body.bytes);
      at = s.at;
      best = s.before >= s.after ? at - 1 : at;
    }
    if (list[at]?.body === body || list[best]?.body === body) return holds;
    this.version++;
    const k: Kept = { body, tenant: p.tenant, size };
    let share = this.shares.get(p.tenant);
    if (share === undefined) this.shares.set(p.tenant, (share = { recent: new Set(), bytes: 0 }));
    this.bytes += k.size;
    share.bytes += k.size;
    this.lru.add(k);
    share.recent.add(k);
    // The new body sorts between list[at - 1] and list[at]. When it extends the earlier one (every
    // element of the array it diverged in was reused), it takes that one's place, which keeps the
    // order; so does an identical body's.
    const same =
      list[at] !== undefined &&
      list[at].body.bytes.length === body.bytes.length &&
      list[at].body.bytes.equals(body.bytes);
    const slot = p.extended && p.prev !== undefined && list[best] === p.prev ? best : same ? at : -1;
    if (slot >= 0) {
      this.forget(list[slot]);
      list[slot] = k;
    } else list.splice(at, 0, k);
    // The tenant's own least recent first (O(1) to find; its removal from the sorted list is a
    // native indexOf and splice), then everyone's.
    while (list.length > this.maxPerTenant || share.bytes > this.maxTenantBytes)
      this.drop(share.recent.values().next().value as Kept);
    while (this.bytes > this.maxBytes) this.drop(this.lru.values().next().value as Kept);
    return holds;
  }

  /**
   * The pipeline's intern replaced some of the array `key`'s elements the memo handed out
   * (`received`) with JSON-equal objects of the session's earlier call (`interned`): the record
   * hands those out from now on, so the next call's elements are the session's objects again and
   * the intern finds them identical instead of comparing them in full (after a memo miss, a
   * parse against another session's body, any other reuse). Only elements the record itself
   * handed out are replaced, so an adapter's converted objects never enter it. JSON-equal as the
   * intern's sameJson sees it: the same text, except that it takes 0 for -0 (JSON.stringify
   * writes both as 0, so nothing sent or stored differs). O(elements).
   */
  adopt(p: PendingBody | undefined, key: string, received: readonly unknown[], interned: readonly unknown[]): void {
    if (p === undefined || received === interned || received.length !== interned.length) return;
    const r = p.body;
    const j = r.members.findIndex((m) => m.key === key);
    const items = r.items[j];
    if (items === undefined || items.length !== received.length) return;
    let changed = false;
    for (let i = 0; i < items.length; i++) {
      if (interned[i] === received[i] || items[i] !== received[i]) continue;
      items[i] = interned[i];
      changed = true;
    }
    // The whole array is handed out when the next body leaves it unchanged: that one too.
    if (changed && r.values[j] === received) r.values[j] = items.slice();
  }

  private touch(k: Kept): void {
    if (!this.lru.delete(k)) return;
    this.lru.add(k);
    const r = this.shares.get(k.tenant)?.recent;
    r?.delete(k);
    r?.add(k);
  }

  /** Out of the LRUs and the byte counts (its tenant's list is the caller's). */
  private forget(k: Kept): void {
    if (!this.lru.delete(k)) return;
    this.bytes -= k.size;
    const share = this.shares.get(k.tenant);
    if (share === undefined) return;
    share.recent.delete(k);
    share.bytes -= k.size;
    if (share.recent.size === 0) this.shares.delete(k.tenant);
  }

  private drop(k: Kept): void {
    if (!this.lru.has(k)) return;
    this.forget(k);
    this.version++;
    const list = this.tenants.get(k.tenant);
    if (list === undefined) return;
    const i = list.indexOf(k);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.tenants.delete(k.tenant);
  }
}

const NONE: readonly Kept[] = [];

const CLOSE_OBJ = 0x7d;

/** `buf` up to its last `}` (the whole of it when it has none): what the memo compares and keeps.
 * O(bytes after that brace): the search runs from the end. */
function head(buf: Buffer): Buffer {
  const end = buf.lastIndexOf(CLOSE_OBJ);
  return end > 0 ? buf.subarray(0, end) : buf;
}

/**
 * Where `buf` sorts in `list` (the first entry not below it), and its common prefix with the
 * entries before and after that point (0 where there is none). Each step of the binary search is
 * one native bytewise compare (memcmp up to the first difference); the exact common prefix is
 * measured only with the two neighbours found, the entries a longest common prefix can be with.
 */
function search(list: readonly Kept[], buf: Buffer): { at: number; before: number; after: number } {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    // buf sorts after the entry (bytewise, a proper prefix first): the entry is below it.
    if (buf.compare(list[mid].body.bytes) > 0) lo = mid + 1;
    else hi = mid;
  }
  return {
    at: lo,
    before: lo > 0 ? prefixWith(buf, list[lo - 1]) : 0,
    after: lo < list.length ? prefixWith(buf, list[lo]) : 0,
  };
}

function prefixWith(buf: Buffer, k: Kept): number {
  return commonPrefix(buf, k.body.bytes, 0, lastElementEnd(k.body));
}
