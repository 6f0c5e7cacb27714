// Canonical JSON (keys sorted, no whitespace, undefined dropped) and its sha256: the one
// serialisation used for checksums, checkpoints and content hashes, so equal data always
// hashes equal regardless of key insertion order. O(n log k) for n values, k keys per object;
// a deep-frozen value (deep-freeze.ts: session-state parts) of at most MEMO_MAX_CHARS is written
// once and remembered, so a big part that changed is rebuilt from its unchanged pieces' strings.
import { hash } from 'node:crypto';
import { isDeepFrozen } from './deep-freeze.ts';

let memo = new WeakMap<object, string>();
/** Longest canonical JSON remembered per frozen value: bigger ones are joined from their children
 * each time (a native copy), so no text is remembered once per level of nesting. */
export const MEMO_MAX_CHARS = 4096;
/** Values remembered before the memo starts afresh. A WeakMap's table keeps the capacity its peak
 * needed: a full GC drops the entries of values that died but V8 does not shrink the table, so the
 * values a burst of calls freezes and writes between two full GCs (each call's new stage parts and
 * their nested objects, under the Redis store's encode) left it at the burst's size for the process's
 * life (bench chaos --redis: 2 MB after the warm-up, 8 MB holding 9k entries at the end). Afresh,
 * the old table goes at the next full GC and the new one holds at most this many: ~2 MB. Cost: each
 * live value's text is written once more after a start afresh. */
export const MEMO_GENERATION = 1 << 16;
let remembered = 0;

export function canonicalJson(value: unknown): string {
  return write(value);
}

function write(v: unknown): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      // Non-finite numbers have no JSON form; null is what JSON.stringify writes too.
      return Number.isFinite(v) ? JSON.stringify(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(v.toString());
    case 'undefined':
    case 'function':
    case 'symbol':
      return 'null';
    default:
      break;
  }
  if (!isDeepFrozen(v as object)) return writeObject(v as object);
  let s = memo.get(v as object);
  if (s === undefined) {
    s = writeObject(v as object);
    if (s.length <= MEMO_MAX_CHARS) {
      if (++remembered > MEMO_GENERATION) {
        memo = new WeakMap();
        remembered = 1;
      }
      memo.set(v as object, s);
    }
  }
  return s;
}

function writeObject(v: object): string {
  if (Array.isArray(v)) return '[' + v.map((x) => (x === undefined ? 'null' : write(x))).join(',') + ']';
  const obj = v as Record<string, unknown>;
  if (typeof (obj as { toJSON?: unknown }).toJSON === 'function')
    return write((obj as { toJSON: () => unknown }).toJSON());
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + write(obj[k])).join(',') + '}';
}

/** One-shot `crypto.hash` (no Hash object: ~1 µs less a call than createHash, same digest). */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** sha256 of the canonical JSON of a value. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
