// A generated two-tenant workload for the fleet simulator (`bench fleet --tenants 2`, and the
// tests, which never read a recorded trace): tenants unlike in what their calls cost an engine,
// the shapes of review s34 F5.
//  - "decode": conversations whose prompts the engines mostly hold (a prefix shared by all of the
//    tenant's calls, then the session's own history, growing by one turn a call) and long answers.
//  - "prefill": one-off calls with cold prompts (nothing shared) and short answers.
// Arrivals are Poisson per tenant (open loop, as the Mooncake traces are); each record is a Mooncake
// record (timestamp, input_length, output_length, hash_ids of 512-token blocks) plus its `tenant`,
// which tenantOf (tenants.ts) takes over the hash. Deterministic for a seed. O(calls × blocks).
// Settings: TwoKindsOptions (defaults TWO_KINDS_DEFAULTS).
import { mulberry32 } from '../../kvplanner/rng.ts';
import { MOONCAKE_BLOCK_TOKENS, type MooncakeRecord } from './trace.ts';

export interface TwoKindsOptions {
  seed: number;
  /** arrivals over this long, s */
  durationS: number;
  /** calls per second of each tenant */
  decodeRatePerS: number;
  prefillRatePerS: number;
  /** decode tenant: the prefix all its calls share, the turn each call adds, its answers */
  decodeSharedTokens: number;
  decodeTurnTokens: number;
  decodeTurnsPerSession: number;
  decodeOutputTokens: [number, number];
  /** prefill tenant: its cold prompts and answers */
  prefillInputTokens: [number, number];
  prefillOutputTokens: [number, number];
}

export const TWO_KINDS_DEFAULTS: TwoKindsOptions = {
  seed: 1,
  durationS: 600,
  decodeRatePerS: 0.5,
  prefillRatePerS: 0.5,
  decodeSharedTokens: 8192,
  decodeTurnTokens: 1024,
  decodeTurnsPerSession: 8,
  decodeOutputTokens: [1500, 2500],
  prefillInputTokens: [12_288, 24_576],
  prefillOutputTokens: [16, 64],
};

export type TwoKindsRecord = MooncakeRecord & { tenant: 'decode' | 'prefill' };

/** The workload's records in arrival order. */
export function twoKindsTrace(o: Partial<TwoKindsOptions> = {}): TwoKindsRecord[] {
  const s = { ...TWO_KINDS_DEFAULTS, ...o };
  const rnd = mulberry32(s.seed);
  const between = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
  const exp = (rate: number): number => (-Math.log(1 - rnd()) / rate) * 1000;
  const out: TwoKindsRecord[] = [];
  // hash ids: decode's shared prefix 1…, then fresh ids from a counter (never shared by accident)
  const sharedBlocks = Math.floor(s.decodeSharedTokens / MOONCAKE_BLOCK_TOKENS);
  let nextId = sharedBlocks + 1;
  const fresh = (n: number): number[] => Array.from({ length: n }, () => nextId++);
  const shared = Array.from({ length: sharedBlocks }, (_, i) => i + 1);
  let session: number[] = [];
  let turns = 0;
  for (let t = exp(s.decodeRatePerS); t < s.durationS * 1000; t += exp(s.decodeRatePerS)) {
    if (turns === 0) session = [...shared];
    session = [...session, ...fresh(Math.ceil(s.decodeTurnTokens / MOONCAKE_BLOCK_TOKENS))];
    turns = (turns + 1) % s.decodeTurnsPerSession;
    out.push({
      timestamp: Math.round(t),
      input_length: session.length * MOONCAKE_BLOCK_TOKENS,
      output_length: between(...s.decodeOutputTokens),
      hash_ids: session,
      tenant: 'decode',
    });
  }
  for (let t = exp(s.prefillRatePerS); t < s.durationS * 1000; t += exp(s.prefillRatePerS)) {
    const input = between(...s.prefillInputTokens);
    out.push({
      timestamp: Math.round(t),
      input_length: input,
      output_length: between(...s.prefillOutputTokens),
      hash_ids: fresh(Math.ceil(input / MOONCAKE_BLOCK_TOKENS)),
      tenant: 'prefill',
    });
  }
  return out.sort((a, b) => a.timestamp - b.timestamp);
}

/** The records as Mooncake JSONL (bench fleet reads it; the tenant rides along). */
export function twoKindsJsonl(o: Partial<TwoKindsOptions> = {}): string {
  return twoKindsTrace(o)
    .map((r) => JSON.stringify(r))
    .join('\n');
}
