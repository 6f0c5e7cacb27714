// The block chain a block-index policy routes on: the middleware's hashes when given, else hashed
// here from token ids, else 64-character text chunks (≈16 tokens each); a tenant's cache salt seeds
// the chain as it seeds the engines' (the same seeds as ctxgate's). O(prompt) when hashing.
import { blockHashes, hashSeed, TEXT_BLOCK_CHARS, textBlockHashes } from './block-hash.ts';
import type { RouteInfo } from './types.ts';

export interface RequestChain {
  hashes: readonly string[];
  blockTokens: number;
  promptTokens: number;
}

export function requestChain(info: RouteInfo, blockSize: number): RequestChain {
  if (info.blockHashes) {
    return {
      hashes: info.blockHashes,
      blockTokens: blockSize,
      promptTokens: info.promptTokens ?? info.promptTokenIds?.length ?? info.blockHashes.length * blockSize,
    };
  }
  if (info.promptTokenIds) {
    return {
      hashes: blockHashes(info.promptTokenIds, blockSize, hashSeed(info.cacheSalt)),
      blockTokens: blockSize,
      promptTokens: info.promptTokens ?? info.promptTokenIds.length,
    };
  }
  const text = info.text ?? '';
  return {
    hashes: textBlockHashes(
      text,
      TEXT_BLOCK_CHARS,
      info.cacheSalt ? `${info.model}\u0000${info.cacheSalt}` : info.model,
    ),
    blockTokens: TEXT_BLOCK_CHARS / 4,
    promptTokens: info.promptTokens ?? Math.ceil(text.length / 4),
  };
}
