// `bench fleet` inputs from recorded agent sessions: the gateway's capture files and the replay
// formats (request-stream JSONL, mini-swe-agent, SWE-agent, aider; read by loadtest/formats).
// Every call is rendered with the model's chat template and tokenised with the real tokenizer
// (the reference worker's, so the ids are the engines'); its blocks are `blockTokens`-token
// chains hashed as the gateway and the engines hash them (kvplanner/block-hash.ts), interned to
// small keys for the engine models. Sessions start as a Poisson process of `ratePerS` (seeded);
// within a session the calls are sequential: call k+1 arrives `thinkMs` after call k's answer
// (FleetRequest.after, resolved by the simulator on its clock). Output length: the recorded
// usage's completion tokens, else the recorded answer's tokens (the assistant message the next
// call repeats), else `defaultOutputTokens`.
// Cost: one template render + one encode per call (pieces memoised) and one SHA-256 per block.
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { mulberry32 } from '../../kvplanner/rng.ts';
import { recordedAnswer } from '../formats/recorded-answer.ts';
import type { Session } from '../formats/types.ts';
import { loadWorkerTokenizer, type WorkerTokenizer } from '../sim-worker/tokenize.ts';
import { type ChainInterner, type FleetRequest, routeHash, TEXT_CHARS_PER_BLOCK } from './trace.ts';

/** Session starts per second when --rate is not given. */
export const DEFAULT_SESSION_RATE_PER_S = 0.5;
/** Agent-side time between an answer and the next call (tool runs, the agent's own work). */
export const DEFAULT_THINK_MS = 2_000;
/** Answer length when the recording kept neither usage nor the answer (a session's last call). */
export const DEFAULT_OUTPUT_TOKENS = 256;
/** Chain block size for session inputs (Mooncake's, so results compare). */
export const DEFAULT_SESSION_BLOCK_TOKENS = 512;

export interface SessionInputOptions {
  tokenizer: string;
  chatTemplateFile?: string;
  blockTokens: number;
  /** Session starts per second (Poisson). */
  ratePerS: number;
  seed: number;
  thinkMs: number;
  defaultOutputTokens: number;
  /** Only sessions starting in the first S seconds. */
  durationS?: number;
}

/** Seeded Poisson arrival times (ms), first gap included. */
export function poissonStarts(n: number, ratePerS: number, seed: number): number[] {
  if (!(ratePerS > 0)) throw new Error(`--rate must be > 0 sessions/s, got ${ratePerS}`);
  const rand = mulberry32(seed);
  const out: number[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += (-Math.log(1 - rand()) / ratePerS) * 1000;
    out.push(t);
  }
  return out;
}

function answerTokens(tok: WorkerTokenizer, s: Session, k: number): number | undefined {
  const used = s.calls[k].recordedUsage?.completion_tokens;
  if (used !== undefined && used > 0) return used;
  const a = recordedAnswer(s, k);
  if (!a) return undefined;
  let text = typeof a.content === 'string' ? a.content : a.content == null ? '' : JSON.stringify(a.content);
  if (typeof a.reasoning_content === 'string') text += a.reasoning_content;
  if (a.tool_calls.length) text += JSON.stringify(a.tool_calls);
  const n = tok.encodeCached(text).length;
  return n > 0 ? n : undefined;
}

/** One call as a fleet request (id, arrival and `after` set by the caller). */
export function callRequest(
  tok: WorkerTokenizer,
  s: Session,
  k: number,
  chain: ChainInterner,
  o: Pick<SessionInputOptions, 'blockTokens' | 'defaultOutputTokens'>,
): Omit<FleetRequest, 'id' | 'arrivalMs'> {
  const body = s.calls[k].body;
  const prompt = tok.renderChat(body.messages as never, { tools: body.tools as unknown[] | undefined });
  const ids = tok.encodeCached(prompt);
  const chainHashes = blockHashes(ids, o.blockTokens);
  const keys = new Int32Array(chainHashes.length);
  const hashes = new Array<string>(chainHashes.length);
  let text = '';
  for (let b = 0; b < chainHashes.length; b++) {
    // the chain hash already covers every earlier block: interning it alone keeps chains chains
    keys[b] = chain.key(0, chainHashes[b]);
    hashes[b] = routeHash(keys[b]);
    text += keys[b].toString(36).padStart(TEXT_CHARS_PER_BLOCK - 1, '0') + '|';
  }
  // the partial last block still tells text routers apart: its ids' own code
  const tail = ids.length - chainHashes.length * o.blockTokens;
  if (tail > 0) {
    const last = blockHashes(ids.slice(ids.length - tail), tail, chainHashes[chainHashes.length - 1] ?? 'tail')[0];
    text += last.slice(0, TEXT_CHARS_PER_BLOCK - 1) + '|';
  }
  return {
    inputTokens: Math.max(1, ids.length),
    outputTokens: Math.max(1, answerTokens(tok, s, k) ?? o.defaultOutputTokens),
    blockTokens: o.blockTokens,
    keys,
    hashes,
    text,
  };
}

/**
 * Fleet requests of `sessions`: each session's first call at its Poisson start, every later call
 * `after` the previous one (arrivalMs there is the earliest it could come: the previous arrival).
 * Sessions keep their given order for the draw, so a seed gives the same starts every run.
 */
export async function sessionRequests(
  sessions: readonly Session[],
  chain: ChainInterner,
  o: SessionInputOptions,
): Promise<FleetRequest[]> {
  if (!Number.isInteger(o.blockTokens) || o.blockTokens < 1)
    throw new Error(`--block-size must be a positive integer, got ${o.blockTokens}`);
  const tok = await loadWorkerTokenizer(o.tokenizer, o.chatTemplateFile);
  const starts = poissonStarts(sessions.length, o.ratePerS, o.seed);
  const out: FleetRequest[] = [];
  sessions.forEach((s, i) => {
    if (o.durationS !== undefined && starts[i] > o.durationS * 1000) return;
    const sessionId = `${i}:${s.id}`;
    let prev: number | undefined;
    for (let k = 0; k < s.calls.length; k++) {
      const id = out.length;
      let call: Omit<FleetRequest, 'id' | 'arrivalMs'>;
      try {
        call = callRequest(tok, s, k, chain, o);
      } catch (err) {
        throw new Error(`${s.source}: call ${k + 1} cannot be rendered (${(err as Error).message})`);
      }
      out.push({
        ...call,
        id,
        arrivalMs: starts[i],
        sessionId,
        ...(prev === undefined ? {} : { after: prev, thinkMs: o.thinkMs }),
      });
      prev = id;
    }
  });
  return out;
}
