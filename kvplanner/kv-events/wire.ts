// Engine KV cache events on the wire, as vLLM publishes them (vllm/distributed/kv_events.py) and
// SGLang copies (python/sglang/srt/disaggregation/kv_events.py): each ZeroMQ PUB message is three
// frames [topic, seq (8-byte big-endian), payload]; the payload is a msgpack KVEventBatch
// `[ts, [event, …], data_parallel_rank]` (SGLang: attn_dp_rank). Events are tagged by their class
// name: current vLLM writes each as a map with a `type` key and every field without a default (nil
// when unset); the older layout (and SGLang's) is an array, tag first, fields in declaration order:
//   BlockStored      [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
//                     lora_name, extra_keys, group_idx, kv_cache_spec_kind, …]
//   BlockRemoved     [tag, block_hashes, medium, group_idx]
//   AllBlocksCleared [tag]
// A block hash is an unsigned 64-bit integer, or the raw digest bytes when vLLM runs with
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0; both are kept as opaque strings here. The replay socket
// (ROUTER) takes [empty, start seq] from a DEALER and answers [empty, seq, payload] per buffered
// batch from `start` on, then [empty, seq = -1, empty payload]. decodeBatch accepts both layouts and
// a batch given as a map; encodeBatch writes vLLM's current one, encodeSglangBatch SGLang's (one
// BlockStored per radix page). O(payload) either way.
import { Decoder, Encoder } from '@msgpack/msgpack';

/** An engine block hash, normalised: decimal for integers, `x` + hex for digest bytes. */
export type EngineHash = string;

export type KvEvent =
  | {
      type: 'BlockStored';
      blockHashes: EngineHash[];
      parentBlockHash: EngineHash | null;
      tokenIds: number[];
      blockSize: number;
      medium: string | null;
      /** vLLM's per-block extra keys (block 0 of a chain carries the request's cache_salt). */
      extraKeys: Array<unknown[] | null> | null;
      loraName: string | null;
      /** SGLang's own field (map layout only: in the array layout its slot is vLLM's lora_name). */
      cacheSalt: string | null;
      groupIdx: number | null;
    }
  | { type: 'BlockRemoved'; blockHashes: EngineHash[]; medium: string | null; groupIdx: number | null }
  | { type: 'AllBlocksCleared' };

export interface KvEventBatch {
  ts: number;
  events: KvEvent[];
  dataParallelRank: number | null;
  /** Events of a type this decoder does not know (skipped, counted). */
  unknown: number;
}

/** Sequence number of the replay socket's end-of-replay marker. */
export const REPLAY_END_SEQ = -1n;

const decoder = new Decoder({ useBigInt64: true });
const encoder = new Encoder({ useBigInt64: true, ignoreUndefined: true });

export function seqBytes(seq: bigint): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigInt64BE(seq);
  return b;
}

export function readSeq(frame: Uint8Array): bigint {
  if (frame.length !== 8) throw new Error(`sequence frame must be 8 bytes, got ${frame.length}`);
  return Buffer.from(frame.buffer, frame.byteOffset, 8).readBigInt64BE();
}

function hashOf(v: unknown): EngineHash {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v).toString();
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt.asUintN(64, BigInt(v)).toString();
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
  throw new Error('block hash must be an integer or bytes');
}

const hashes = (v: unknown): EngineHash[] => {
  if (!Array.isArray(v)) throw new Error('block_hashes must be an array');
  return v.map(hashOf);
};
const num = (v: unknown): number | null =>
  typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : v == null ? null : NaN;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function field(raw: unknown, name: string, pos: number): unknown {
  if (Array.isArray(raw)) return raw[pos];
  return (raw as Record<string, unknown>)[name];
}

function decodeEvent(raw: unknown): KvEvent | undefined {
  const tag = Array.isArray(raw) ? raw[0] : (raw as Record<string, unknown> | null)?.type;
  if (tag === 'BlockStored') {
    const tokenIds = field(raw, 'token_ids', 3);
    if (!Array.isArray(tokenIds)) throw new Error('token_ids must be an array');
    const extra = field(raw, 'extra_keys', 8);
    return {
      type: 'BlockStored',
      blockHashes: hashes(field(raw, 'block_hashes', 1)),
      parentBlockHash: field(raw, 'parent_block_hash', 2) == null ? null : hashOf(field(raw, 'parent_block_hash', 2)),
      tokenIds: tokenIds.map((t) => Number(t)),
      blockSize: num(field(raw, 'block_size', 4)) ?? 0,
      medium: str(field(raw, 'medium', 6)),
      loraName: str(field(raw, 'lora_name', 7)),
      cacheSalt: Array.isArray(raw) ? null : str(field(raw, 'cache_salt', -1)),
      extraKeys: Array.isArray(extra) ? extra.map((e) => (Array.isArray(e) ? e : null)) : null,
      groupIdx: num(field(raw, 'group_idx', 9)),
    };
  }
  if (tag === 'BlockRemoved')
    return {
      type: 'BlockRemoved',
      blockHashes: hashes(field(raw, 'block_hashes', 1)),
      medium: str(field(raw, 'medium', 2)),
      groupIdx: num(field(raw, 'group_idx', 3)),
    };
  if (tag === 'AllBlocksCleared') return { type: 'AllBlocksCleared' };
  return undefined;
}

/** Decodes one batch payload; throws on a payload that is not a KV event batch. */
export function decodeBatch(payload: Uint8Array): KvEventBatch {
  const raw = decoder.decode(payload);
  const ts = Array.isArray(raw) ? raw[0] : (raw as Record<string, unknown> | null)?.ts;
  const events = Array.isArray(raw) ? raw[1] : (raw as Record<string, unknown> | null)?.events;
  const rank = Array.isArray(raw)
    ? raw[2]
    : ((raw as Record<string, unknown>).data_parallel_rank ?? (raw as Record<string, unknown>).attn_dp_rank);
  if (!Array.isArray(events)) throw new Error('not a KV event batch: no events array');
  const out: KvEventBatch = { ts: Number(ts) || 0, events: [], dataParallelRank: num(rank), unknown: 0 };
  for (const e of events) {
    const ev = decodeEvent(e);
    if (ev) out.events.push(ev);
    else out.unknown++;
  }
  return out;
}

/** An event as a publisher hands it over: hashes as 64-bit integers. */
export type OutgoingEvent =
  | {
      type: 'BlockStored';
      blockHashes: bigint[];
      parentBlockHash: bigint | null;
      tokenIds: number[];
      blockSize: number;
      extraKeys?: Array<unknown[] | null>;
      /** SGLang: the request's salt, on each page */
      cacheSalt?: string;
    }
  | { type: 'BlockRemoved'; blockHashes: bigint[] }
  | { type: 'AllBlocksCleared' };

/** vLLM's current layout: the batch an array, each event a tagged map (GPU medium, group 0). */
export function encodeBatch(ts: number, events: readonly OutgoingEvent[], dataParallelRank = 0): Uint8Array {
  const out = events.map((e) => {
    if (e.type === 'BlockStored') return { ...storedFields(e), lora_name: null, extra_keys: e.extraKeys, group_idx: 0 };
    if (e.type === 'BlockRemoved') return { type: e.type, block_hashes: e.blockHashes, medium: 'GPU', group_idx: 0 };
    return { type: e.type };
  });
  return encoder.encode([ts, out, dataParallelRank]);
}

/** The fields of a BlockStored event both engines write, in their order. */
function storedFields(e: Extract<OutgoingEvent, { type: 'BlockStored' }>): Record<string, unknown> {
  return {
    type: e.type,
    block_hashes: e.blockHashes,
    parent_block_hash: e.parentBlockHash,
    token_ids: e.tokenIds,
    block_size: e.blockSize,
    lora_id: null,
    medium: 'GPU',
  };
}

/** SGLang's layout (its KV-events publisher): the batch a positional array
 *  `[ts, events, attn_dp_rank]`, each event a map tagged by `type` with its optional fields left out
 *  when unset (msgspec omit_defaults; older SGLang wrote array_like events, which decodeBatch reads
 *  too); a salted request's pages carry `cache_salt` (vLLM puts it in extra_keys instead). */
export function encodeSglangBatch(ts: number, events: readonly OutgoingEvent[], attnDpRank = 0): Uint8Array {
  const out = events.map((e) => {
    if (e.type === 'BlockStored') return { ...storedFields(e), ...(e.cacheSalt ? { cache_salt: e.cacheSalt } : {}) };
    if (e.type === 'BlockRemoved') return { type: e.type, block_hashes: e.blockHashes, medium: 'GPU' };
    return { type: e.type };
  });
  return encoder.encode([ts, out, attnDpRank]);
}
