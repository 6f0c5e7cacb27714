// A prompt's chain of block hashes as ctxgate's index keeps it: the given vLLM block hashes, else
// hashed here from token ids (seeded as the middleware's chains), else 64-character text chunks
// (O(text) SHA-256); then every index_stride-th block (block k·stride−1 stands for the group ending
// there: its hash covers everything before it). O(blocks) per read (O(1) when the chain is the one
// sampled last); the result is one reused object (no allocation per decision beyond the sampled
// arrays): read it before the next call. The chains given are never changed after the call. The
// given chain's keys (RouteInfo.blockKeys, hash-keys.ts) come along, sampled the same way.
import { blockHashes, hashSeed, TEXT_BLOCK_CHARS, textBlockHashes } from '../block-hash.ts';
import type { RouteInfo } from '../types.ts';

/** Text-only requests: 64-character pseudo-blocks ≈ 16 tokens. */
const TEXT_BLOCK_TOKENS = TEXT_BLOCK_CHARS / 4;

export interface ChainView {
  hashes: readonly string[];
  /** the hashes' keys (hash-keys.ts), when the request came with them */
  keys: Int32Array | undefined;
  blockTokens: number;
  promptTokens: number;
}

export class ChainReader {
  private readonly view: ChainView = { hashes: [], keys: undefined, blockTokens: 0, promptTokens: 0 };
  /** the last sampled chain and the full one it came from: the feedback of a pick (the gateway's
   *  expected-cached-tokens read) reads the request's chain again right after its select() */
  private sampled: readonly string[] = [];
  private sampledKeys: Int32Array | undefined;
  private sampledFrom: readonly string[] | undefined;
  private sampledKeysFrom: Int32Array | undefined;
  private sampledLength = 0;

  constructor(
    private readonly blockSize: number,
    private readonly stride: number,
  ) {}

  /** The chain as the index keeps it (every stride-th block) and tokens per kept block. */
  read(info: RouteInfo): ChainView {
    const c = this.full(info);
    if (this.stride === 1) return c;
    const full = c.hashes;
    const keys = c.keys;
    if (full !== this.sampledFrom || full.length !== this.sampledLength || keys !== this.sampledKeysFrom) {
      // a new array each time: a pick keeps its chain (pending feedback, claims)
      const sampled: string[] = [];
      for (let i = this.stride - 1; i < full.length; i += this.stride) sampled.push(full[i]);
      let sampledKeys: Int32Array | undefined;
      if (keys !== undefined) {
        sampledKeys = new Int32Array(2 * sampled.length);
        for (let j = 0, i = this.stride - 1; j < sampled.length; j++, i += this.stride) {
          sampledKeys[2 * j] = keys[2 * i];
          sampledKeys[2 * j + 1] = keys[2 * i + 1];
        }
      }
      this.sampled = sampled;
      this.sampledKeys = sampledKeys;
      this.sampledFrom = full;
      this.sampledKeysFrom = keys;
      this.sampledLength = full.length;
    }
    c.hashes = this.sampled;
    c.keys = this.sampledKeys;
    c.blockTokens *= this.stride;
    return c;
  }

  private full(info: RouteInfo): ChainView {
    const c = this.view;
    if (info.blockHashes) {
      c.hashes = info.blockHashes;
      // keys that do not cover the chain are not its keys: read by the strings
      const k = info.blockKeys;
      c.keys = k !== undefined && k.length === 2 * info.blockHashes.length ? k : undefined;
      c.blockTokens = this.blockSize;
      c.promptTokens = info.promptTokens ?? info.promptTokenIds?.length ?? info.blockHashes.length * this.blockSize;
      return c;
    }
    if (info.promptTokenIds) {
      // seeded as the middleware's chains (middleware/tokens/prefix-blocks.ts): both must agree
      c.hashes = blockHashes(info.promptTokenIds, this.blockSize, hashSeed(info.cacheSalt));
      c.keys = undefined;
      c.blockTokens = this.blockSize;
      c.promptTokens = info.promptTokens ?? info.promptTokenIds.length;
      return c;
    }
    const text = info.text ?? '';
    c.keys = undefined;
    c.hashes = textBlockHashes(
      text,
      TEXT_BLOCK_CHARS,
      info.cacheSalt ? `${info.model}\u0000${info.cacheSalt}` : info.model,
    );
    c.blockTokens = TEXT_BLOCK_TOKENS;
    c.promptTokens = info.promptTokens ?? Math.ceil(text.length / 4);
    return c;
  }
}
