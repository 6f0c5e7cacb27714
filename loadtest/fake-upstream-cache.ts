// The fake upstream's prefix cache: the cached_tokens a prefix-caching engine reports, so that the
// overhead bench measures ctxgate in front of the engines it is deployed in front of (vLLM and
// SGLang report the prefix they reused; a worker that reports 0 reads to ctxgate's routing as one
// that never caches, and its index then evicts and re-inserts every prompt's chain per call).
// Labelled as a model of vLLM's block cache, not an engine: the reference worker's (loadtest/
// sim-worker/block-cache.ts over block-pool.ts, here fake-block-pool.ts) steps, taken at once per request because the fake
// answers at once: the prompt's full blocks are matched (a hit never covers the last prompt
// token), then the prompt and the answer (as the chat template renders it after the prompt, all
// but its last token) are cached, the request's blocks freed tail first into the LRU free queue.
// Token ids: the reference worker's tokenizer and template (the prompt encoded as one sequence, cut
// at special tokens, each piece's ids memoised by its text). Equal to the reference worker's
// cached and prompt tokens on the same calls (test/loadtest/fake-upstream-cache.test.ts).
// Faster than the reference worker's path by what the bench needs (its CPU shares the host with
// the gateway under test): block keys are numbers (a 53-bit chained hash: one allocation-free Map
// key per block, no string per block), the ids are hashed piece by piece as they are looked up
// (no ids array of the prompt), and the answer's ids are derived from the pieces where the
// rendering with the answer departs from the prompt's (no second encoding of the whole prompt).
// A session's next prompt extends its last one as a real engine's prefix cache makes repeats cheap:
// the fake keeps, per session (its first two messages), where its last prompt's last special token
// ended (text, pieces, the full blocks' keys, the hasher mid-block) and, when the new prompt's text
// starts with that text (compared, so any other prompt takes the full path), cuts, looks up and
// hashes only the rest; the earlier blocks are looked up by key along their chain (FakeBlockPool
// find: a pointer compare each) and held, freed and evicted exactly as before. On the bench's
// growing sessions (fresh content per session) 0.8 ms -> 0.4 ms CPU per call, reports identical
// (/work/notes/hbench-s27/fake-cost.mts).
// Cost per request: two template renders, O(prompt characters) compares, O(new characters) to split
// and look up the new pieces, O(new tokens) hashing, O(prompt blocks) pointer compares and pool
// steps. Memory: the piece memo (two generations of at most PIECE_MEMO_CHARS / 2 characters of keys
// each, copies that hold no prompt alive, with their ids), capacity
// blocks, and PREFIX_MEMOS sessions' last prompt text and block keys.
import { loadTokenizer } from '../middleware/tokens/registry.ts';
import type { ToolDef } from '../middleware/types.ts';
import { DEFAULT_BLOCK_SIZE } from '../kvplanner/block-hash.ts';
import { FakeBlockPool, type FakeBlock } from './fake-block-pool.ts';
import { loadWorkerTokenizer, type ChatMessage, type WorkerTokenizer } from './sim-worker/tokenize.ts';

/** KV capacity of the fake's cache, tokens (the reference worker's default). */
export const DEFAULT_FAKE_KV_TOKENS = 1_000_000;
/** Characters of piece text memoised, both generations together (~2 bytes a character for the key
 *  and ~2.6 for its ids: ~75 MB). The bench's live sessions through ctxgate (whose rewritten
 *  prompts do not always resume) look up ~4M characters of pieces; a piece used in the last
 *  generation is kept in the next, so starting one is no wave of misses. */
const PIECE_MEMO_CHARS = 16 * 1024 * 1024;

export interface FakeCacheOptions {
  tokenizer: string;
  kvTokens?: number;
  blockSize?: number;
}

/** What the engine would report for one request. */
export interface FakeCacheReport {
  promptTokens: number;
  cachedTokens: number;
}

/** The fake's answer, as the reference worker's forced output (sim_output) would carry it. */
export interface FakeAnswer {
  content: string | null;
  toolCalls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

interface HasherState {
  parent: number;
  h1: number;
  h2: number;
  n: number;
  open: number[];
}

/**
 * What a session's last prompt left to resume from: its text up to its last special token (whose
 * pieces are `pieces`), the keys of the full blocks its ids filled, and the hasher mid-block there.
 * A prompt that starts with `text` is cut and hashed from there on only: its pieces up to there are
 * `pieces` (see chat) and its ids hash to the same keys.
 */
interface PrefixMemo {
  salt: string | undefined;
  text: string;
  pieces: string[];
  keys: number[];
  tokens: number;
  state: HasherState;
}

/** Sessions whose last prompt is kept to resume from (least recently used dropped first). */
const PREFIX_MEMOS = 256;

/** Streaming chained block hash: the ids of one block fed one at a time; keys are 53-bit numbers. */
class ChainHasher {
  private h1 = 0;
  private h2 = 0;
  private n = 0;
  parent = 0;
  /** ids fed to the open block (its tail, needed when the chain continues past the prompt) */
  readonly open: number[] = [];

  constructor(readonly blockSize: number) {}

  reset(root: number): void {
    this.parent = root;
    this.n = 0;
    this.open.length = 0;
    this.start();
  }

  private start(): void {
    const p = this.parent;
    this.h1 = Math.imul(0x811c9dc5 ^ (p >>> 0), 0x01000193);
    this.h2 = Math.imul(0x9e3779b1 ^ Math.floor(p / 4294967296), 0x85ebca6b);
  }

  /** The state mid-chain, to resume from with restore(). */
  snapshot(): HasherState {
    return { parent: this.parent, h1: this.h1, h2: this.h2, n: this.n, open: this.open.slice() };
  }

  restore(st: HasherState): void {
    this.parent = st.parent;
    this.h1 = st.h1;
    this.h2 = st.h2;
    this.n = st.n;
    this.open.length = 0;
    for (const id of st.open) this.open.push(id);
  }

  /** Feeds one id; the key of the block it completes, else -1. */
  push(id: number): number {
    const t = id + 1;
    this.h1 = Math.imul(this.h1 ^ t, 0x01000193);
    let h2 = Math.imul(this.h2 ^ t, 0xc2b2ae35);
    h2 ^= h2 >>> 15;
    this.h2 = h2;
    this.open.push(id);
    if (++this.n < this.blockSize) return -1;
    // 32 bits of h1 and 21 of h2: exact as a double, never negative (-1 is free as "no block")
    const key = (this.h1 >>> 0) + (this.h2 >>> 11) * 4294967296;
    this.parent = key;
    this.n = 0;
    this.open.length = 0;
    this.start();
    return key;
  }
}

/** Strings at least this long that V8 cuts from another are slices of it (SlicedString::kMinLength). */
const SLICE_MIN_CHARS = 13;

/**
 * A copy of `s` that holds no other string alive. A piece is cut from its whole prompt, and V8
 * makes a cut of 13 or more characters a view of the string it was cut from: a memo keyed by
 * the piece itself kept every prompt with a new piece alive (~30-60 KB each, at every call of
 * the bench's growing sessions), and the fake's heap grew to 2.7 GB in one `bench overhead` run,
 * its collections landing in whichever target's calls were running. UTF-16 both ways: any code
 * unit, lone surrogates too, comes back as it was.
 */
function ownCopy(s: string): string {
  return s.length < SLICE_MIN_CHARS ? s : Buffer.from(s, 'utf16le').toString('utf16le');
}

/** `pieces` (consecutive, from 0) cut again from `text`, which starts with their concatenation:
 *  the same strings, viewing `text` instead of the earlier prompts they were cut from. */
function resliced(text: string, pieces: readonly string[]): string[] {
  const out = new Array<string>(pieces.length);
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    const end = at + pieces[i].length;
    out[i] = text.slice(at, end);
    at = end;
  }
  return out;
}

function saltRoot(salt: string | undefined): number {
  if (!salt) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < salt.length; i++) h = Math.imul(h ^ salt.charCodeAt(i), 0x01000193);
  // never 0 (the unsalted root)
  return (h >>> 0) + 4294967296;
}

export class FakePrefixCache {
  readonly pool: FakeBlockPool;
  readonly blockSize: number;
  /** the piece memo's generation being filled, and the one before it (read, promoted from) */
  private pieces = new Map<string, number[]>();
  private oldPieces = new Map<string, number[]>();
  /** by the session's first two messages (JSON) and salt; checked against the prompt's text */
  private readonly prefixMemos = new Map<string, PrefixMemo>();
  private pieceChars = 0;
  private readonly hasher: ChainHasher;
  /** the current request's blocks, in sequence order (reused) */
  private readonly held: FakeBlock[] = [];
  queries = 0;
  hits = 0;
  /** prompts cut and hashed only past their session's previous prompt */
  resumed = 0;

  private constructor(
    private readonly tok: WorkerTokenizer,
    private readonly splitter: RegExp | undefined,
    private readonly specialIds: Map<string, number[]>,
    /** no special token occurs inside another: a cut after one is a cut of any text sharing it */
    private readonly cutsAlign: boolean,
    kvTokens: number,
    blockSize: number,
  ) {
    this.blockSize = blockSize;
    this.pool = new FakeBlockPool(Math.max(1, Math.floor(kvTokens / blockSize)));
    this.hasher = new ChainHasher(blockSize);
  }

  static async load(o: FakeCacheOptions): Promise<FakePrefixCache> {
    const tok = await loadWorkerTokenizer(o.tokenizer);
    const h = await loadTokenizer(o.tokenizer);
    // the reference worker's cut (sim-worker/tokenize.ts): longest special first
    const specials = [...new Set(h.specialTokens)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
    const splitter = specials.length ? new RegExp(`(${specials.map(escapeRe).join('|')})`, 'u') : undefined;
    const specialIds = new Map<string, number[]>();
    for (const s of specials) specialIds.set(s, tok.encode(s));
    const bs = o.blockSize ?? DEFAULT_BLOCK_SIZE;
    if (!(bs >= 1)) throw new Error('block size must be >= 1');
    const cutsAlign = specials.every((a) => specials.every((b) => a === b || !b.includes(a)));
    return new FakePrefixCache(tok, splitter, specialIds, cutsAlign, o.kvTokens ?? DEFAULT_FAKE_KV_TOKENS, bs);
  }

  /** Pieces of a text as encodeCached cuts it (odd indices: special tokens). */
  private split(text: string): string[] {
    return this.splitter ? text.split(this.splitter) : [text];
  }

  private idsOf(piece: string, special: boolean): number[] {
    if (special) {
      const s = this.specialIds.get(piece);
      if (s) return s;
    }
    let ids = this.pieces.get(piece);
    if (!ids) {
      if (this.pieceChars > PIECE_MEMO_CHARS / 2) {
        this.oldPieces = this.pieces;
        this.pieces = new Map();
        this.pieceChars = 0;
      }
      ids = this.oldPieces.get(piece) ?? this.tok.encode(piece);
      this.pieces.set(ownCopy(piece), ids);
      this.pieceChars += piece.length;
    }
    return ids;
  }

  /** A chat request, answered with `answer`: what the engine reports; the cache then holds it. */
  chat(
    messages: ChatMessage[],
    tools: unknown[] | undefined,
    answer: FakeAnswer,
    salt?: string,
    addGenerationPrompt = true,
  ): FakeCacheReport {
    const opts = { tools: tools?.length ? (tools as ToolDef[]) : undefined };
    const promptText = this.tok.renderChat(messages, { ...opts, addGenerationPrompt });
    // a session's next prompt extends its last one: cut and hash only past its last special token
    const memoKey = this.cutsAlign && messages.length >= 2 ? JSON.stringify(messages.slice(0, 2)) : undefined;
    let memo = memoKey === undefined ? undefined : this.prefixMemos.get(memoKey);
    // (=== of two slices: V8 compares flat strings with memcmp; startsWith goes char by char, ~3x slower here)
    if (
      memo &&
      !(
        memo.salt === salt &&
        promptText.length > memo.text.length &&
        promptText.slice(0, memo.text.length) === memo.text
      )
    )
      memo = undefined;
    const prompt = memo
      ? resliced(promptText, memo.pieces).concat(this.split(promptText.slice(memo.text.length)))
      : this.split(promptText);
    const memoOut = memoKey === undefined ? undefined : { key: memoKey, text: promptText, resume: memo };
    const assistant: ChatMessage = {
      role: 'assistant',
      content: answer.content ?? (answer.toolCalls?.length ? null : ''),
    };
    if (answer.toolCalls?.length) assistant.tool_calls = answer.toolCalls;
    let fullText: string | undefined;
    try {
      fullText = this.tok.renderChat([...messages, assistant], { ...opts, addGenerationPrompt: false });
    } catch {
      fullText = undefined; // the template refused the answer's shape: the reference worker's fallback
    }
    if (fullText === undefined) return this.run(prompt, undefined, 0, answer, salt, [], undefined, memoOut);
    // The rendering with the answer usually extends the prompt's text: then only what follows the
    // prompt's last special token is cut and looked up again (where a special token is never part
    // of another, a cut at a special token's end is one both texts' cuts share).
    const last = prompt.length - 1; // split() alternates text and special: the last piece is text
    if (this.cutsAlign && last >= 2) {
      // the pieces before the last are the prompt's text up to its last piece
      const cut = promptText.length - prompt[last].length;
      if (fullText.length >= cut && fullText.slice(0, cut) === promptText.slice(0, cut))
        return this.run(prompt, this.split(fullText.slice(cut)), last, answer, salt, [], undefined, memoOut);
    }
    const full = this.split(fullText);
    let same = 0;
    while (same < last && same < full.length && full[same] === prompt[same]) same++;
    return this.run(prompt, full.slice(same), same, answer, salt, [], undefined, memoOut);
  }

  /** A text completion's prompt (a string, or token ids), answered with `answer` text. */
  text(prompt: string | number[], answer: string, salt?: string): FakeCacheReport {
    const pieces: string[] = [];
    const pre: number[] = [];
    if (typeof prompt === 'string') {
      if (this.tok.bosId !== undefined) pre.push(this.tok.bosId);
      pieces.push(...this.split(prompt));
    } else pre.push(...prompt);
    return this.run(pieces, undefined, 0, { content: answer }, salt, pre, this.encodeText(answer));
  }

  private encodeText(text: string): number[] {
    const out: number[] = [];
    const parts = this.split(text);
    for (let i = 0; i < parts.length; i++)
      if (parts[i]) for (const id of this.idsOf(parts[i], i % 2 === 1)) out.push(id);
    return out;
  }

  /**
   * The reference worker's begin + finish at once: match and hold the prompt's full blocks, then
   * the answer's, then free them tail first. `fullRest`: the pieces of the rendering with the
   * answer from piece `same` on (the pieces before are the prompt's); its ids past the prompt's
   * are the answer's, when it extends the prompt's ids.
   */
  private run(
    prompt: string[],
    fullRest: string[] | undefined,
    same: number,
    answer: FakeAnswer,
    salt: string | undefined,
    pre: number[] = [],
    textOutput?: number[],
    memoOut?: { key: string; text: string; resume: PrefixMemo | undefined },
  ): FakeCacheReport {
    const bs = this.blockSize;
    const pool = this.pool;
    const hasher = this.hasher;
    const held = this.held;
    held.length = 0;
    hasher.reset(saltRoot(salt));
    let n = 0;
    let hitting = true;
    let hitBlocks = 0;
    let stopped = false; // the cache was full of running blocks: the rest runs uncached
    const feedKey = (key: number): void => {
      if (stopped) return;
      const prev = held.length ? held[held.length - 1] : undefined;
      let block = pool.find(key, prev);
      if (block) {
        if (hitting) hitBlocks++;
        pool.ref(block);
      } else {
        hitting = false;
        block = pool.allocate(key);
        if (!block) {
          stopped = true;
          return;
        }
      }
      if (prev) prev.next = block;
      held.push(block);
    };
    const feed = (id: number): void => {
      n++;
      const key = hasher.push(id);
      if (key >= 0) feedKey(key);
    };
    for (const id of pre) feed(id);
    let promptTail: number[] = [];
    // resume from the session's last prompt (its pieces before `same` only: the answer's ids are
    // derived from the prompt's ids from piece `same` on)
    const resume = memoOut?.resume && memoOut.resume.pieces.length <= same ? memoOut.resume : undefined;
    let from = 0;
    if (resume) {
      for (const key of resume.keys) feedKey(key);
      hasher.restore(resume.state);
      n = resume.tokens;
      from = resume.pieces.length;
      this.resumed++;
    }
    // where the next call of the session resumes: after the prompt's last special token
    const memoAt = memoOut && prompt.length >= 3 && prompt.length % 2 === 1 ? prompt.length - 1 : -1;
    let memo: PrefixMemo | undefined;
    for (let i = from; i < prompt.length; i++) {
      if (i === memoAt && !stopped && held.length === Math.floor(n / bs) && memoOut)
        memo = {
          salt,
          text: memoOut.text.slice(0, memoOut.text.length - prompt[i].length),
          pieces: prompt.slice(0, i),
          keys: held.map((b) => b.key),
          tokens: n,
          state: hasher.snapshot(),
        };
      if (!prompt[i]) continue;
      const ids = this.idsOf(prompt[i], i % 2 === 1);
      if (i >= same) for (const id of ids) promptTail.push(id);
      for (const id of ids) feed(id);
    }
    if (memo && memoOut) {
      this.prefixMemos.delete(memoOut.key);
      this.prefixMemos.set(memoOut.key, memo);
      if (this.prefixMemos.size > PREFIX_MEMOS) this.prefixMemos.delete(this.prefixMemos.keys().next().value as string);
    }
    const promptLen = n;
    // a hit never covers the last prompt token: the engine recomputes it for the first logits
    const limitBlocks = Math.floor(Math.max(0, promptLen - 1) / bs);
    if (hitBlocks > limitBlocks) hitBlocks = limitBlocks;
    const fullBlocks = Math.floor(promptLen / bs);
    // the trailing partial block: a private block while the request runs (it may evict one)
    if (promptLen % bs && pool.allocatePrivate()) pool.releasePrivate();
    // the answer's ids: the template's rendering of it after the prompt, else its text + EOS
    let output = textOutput;
    if (!output && fullRest) {
      const fullTail: number[] = [];
      for (let j = 0; j < fullRest.length; j++)
        if (fullRest[j]) for (const id of this.idsOf(fullRest[j], (same + j) % 2 === 1)) fullTail.push(id);
      if (fullTail.length > promptTail.length && promptTail.every((id, k) => fullTail[k] === id))
        output = fullTail.slice(promptTail.length);
    }
    if (!output) {
      const text = answer.toolCalls?.length
        ? answer.toolCalls.map((c) => c.function.name + c.function.arguments).join('')
        : '';
      output = [...this.encodeText(answer.content || text), this.tok.eosId];
    }
    promptTail = [];
    // finish: only a chain whose every prompt block was held is extended (the last output id is
    // never fed back, so it has no KV)
    if (!stopped && held.length === fullBlocks)
      for (let i = 0; i + 1 < output.length && !stopped; i++) {
        const key = hasher.push(output[i]);
        if (key < 0) continue;
        const prev = held.length ? held[held.length - 1] : undefined;
        let block = pool.find(key, prev);
        if (block) pool.ref(block);
        else block = pool.allocate(key);
        if (!block) break;
        if (prev) prev.next = block;
        held.push(block);
      }
    for (let i = held.length - 1; i >= 0; i--) pool.unref(held[i]);
    held.length = 0;
    const cachedTokens = hitBlocks * bs;
    this.queries += promptLen;
    this.hits += cachedTokens;
    return { promptTokens: promptLen, cachedTokens };
  }
}
