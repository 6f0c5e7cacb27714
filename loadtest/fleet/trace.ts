// Fleet simulator inputs, reduced to what routing and the engine model need: arrival time, prompt
// and output lengths, and the prompt's block chain. Mooncake traces (one JSON object a line:
// timestamp ms, input_length, output_length, hash_ids of 512-token blocks) map one hash id to one
// block; the chain key of block i is interned from (key of block i−1, hash id i), so two prompts
// share keys exactly as far as their hash ids agree from the start, whatever the ids encode.
// Only full blocks get keys (an engine never caches a partial block). Cost: O(blocks) per request.
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';

/** Tokens per Mooncake hash id (the FAST'25 release's block size). */
export const MOONCAKE_BLOCK_TOKENS = 512;
/** Characters of routing text per block: text-based routers (SGLang's char tree) see block-sized chunks. */
export const TEXT_CHARS_PER_BLOCK = 8;

export interface FleetRequest {
  /** 0-based position in arrival order. */
  id: number;
  arrivalMs: number;
  inputTokens: number;
  outputTokens: number;
  /** Tokens per chain block. */
  blockTokens: number;
  /** Interned chain keys of the full prompt blocks (engine cache keys). */
  keys: Int32Array;
  /** The same chain as strings (what routers index): routeHash of each key. */
  hashes: string[];
  /** Text standing for the prompt, block by block (for text-based routers). */
  text: string;
  sessionId?: string;
  /** The tenant a generated trace names (two-kinds.ts); tenantOf takes it over the hash. */
  tenant?: string;
  /** Closed loop (agent sessions): this call is sent `thinkMs` after request `after` finished;
   *  arrivalMs is then only the earliest it could come. */
  after?: number;
  thinkMs?: number;
}

/** murmur3's 32-bit finaliser: a bijection on 32-bit words. */
function fmix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A chain key's routing hash, the string the policies index: a canonical block hash (16
 *  lowercase hex digits, as the gateway's chains are, block-hash.ts), so the policies' indexes,
 *  the engines' KV events and the keys the simulator passes (RouteInfo.blockKeys, hash-keys.ts)
 *  take the gateway's path. Low word fmix32(key) (a bijection: distinct keys, distinct hashes),
 *  high word fmix32 of the key xor a constant (spread like a real hash's; one whose high word is
 *  all ones is read by its string, exactly). O(1). */
export function routeHash(key: number): string {
  const hi = fmix32(key ^ 0x9e3779b9);
  const lo = fmix32(key);
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** Interns chain keys: equal (parent, block id) pairs get equal small integers. */
export class ChainInterner {
  private readonly ids = new Map<string, number>();

  key(parent: number, block: number | string): number {
    const k = `${parent}:${block}`;
    let id = this.ids.get(k);
    if (id === undefined) {
      id = this.ids.size + 1;
      this.ids.set(k, id);
    }
    return id;
  }

  get size(): number {
    return this.ids.size;
  }
}

export interface MooncakeRecord {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
  /** not in the released traces: a generated one (two-kinds.ts) names each call's tenant */
  tenant?: string;
}

function isRecord(v: unknown): v is MooncakeRecord {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.timestamp === 'number' &&
    Number.isFinite(o.timestamp) &&
    Number.isInteger(o.input_length) &&
    (o.input_length as number) > 0 &&
    Number.isInteger(o.output_length) &&
    (o.output_length as number) >= 0 &&
    Array.isArray(o.hash_ids) &&
    o.hash_ids.every((x) => Number.isInteger(x))
  );
}

/** One request from a Mooncake record (keys interned in `chain`). */
export function fromMooncake(
  rec: MooncakeRecord,
  id: number,
  chain: ChainInterner,
  blockTokens = MOONCAKE_BLOCK_TOKENS,
): FleetRequest {
  const full = Math.min(rec.hash_ids.length, Math.floor(rec.input_length / blockTokens));
  const keys = new Int32Array(full);
  const hashes = new Array<string>(full);
  let parent = 0;
  let text = '';
  for (let b = 0; b < rec.hash_ids.length; b++) {
    text += rec.hash_ids[b].toString(36).padStart(TEXT_CHARS_PER_BLOCK - 1, '0') + '|';
    if (b >= full) continue;
    parent = chain.key(parent, rec.hash_ids[b]);
    keys[b] = parent;
    hashes[b] = routeHash(parent);
  }
  return {
    id,
    arrivalMs: rec.timestamp,
    inputTokens: rec.input_length,
    outputTokens: Math.max(1, rec.output_length),
    blockTokens,
    keys,
    hashes,
    text,
    ...(typeof rec.tenant === 'string' ? { tenant: rec.tenant } : {}),
  };
}

/** Parses Mooncake JSONL; `source` names the file in errors. */
export function parseMooncake(text: string, source: string, chain: ChainInterner, firstId = 0): FleetRequest[] {
  const out: FleetRequest[] = [];
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n].trim();
    if (!line) continue;
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${n + 1}: not JSON (${(err as Error).message})`);
    }
    if (!isRecord(obj))
      throw new Error(
        `${source}:${n + 1}: not a Mooncake record (timestamp, input_length > 0, output_length >= 0, hash_ids[])`,
      );
    out.push(fromMooncake(obj, firstId + out.length, chain));
  }
  return out;
}

export async function readMooncake(path: string, chain: ChainInterner, firstId = 0): Promise<FleetRequest[]> {
  const raw = await readFile(path);
  return parseMooncake((path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'), path, chain, firstId);
}

/** Sorts by arrival (stable), renumbers ids, applies the rate scale and the duration cut. */
export function arrange(reqs: FleetRequest[], rateScale: number, durationS?: number): FleetRequest[] {
  if (!(rateScale > 0)) throw new Error(`--rate-scale must be > 0, got ${rateScale}`);
  const sorted = [...reqs].sort((a, b) => a.arrivalMs - b.arrivalMs);
  const t0 = sorted.length ? sorted[0].arrivalMs : 0;
  const out: FleetRequest[] = [];
  for (const r of sorted) {
    const at = (r.arrivalMs - t0) / rateScale;
    if (durationS !== undefined && at > durationS * 1000) break;
    out.push({ ...r, id: out.length, arrivalMs: at });
  }
  return out;
}
