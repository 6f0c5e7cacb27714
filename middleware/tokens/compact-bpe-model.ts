// Swaps a loaded BPE model's vocabulary and merge ranks (@lenml/tokenizers: a Map and an array over
// 151k token strings, 151k merge arrays, a Map over 151k JSON pair keys, the parsed JSON config:
// ~750k objects, ~46 MB for Qwen) for the flat tables of compact-vocab.ts, so a mark-compact
// walks a few objects instead of those. The library's own code keeps running: its encode reads `tokens_to_ids` through a
// read-only Map-like view, and the two methods that read the replaced structures are given
// instance versions with the library's logic over the tables (`_add_node`: a merge's rank;
// `convert_ids_to_tokens`: id → token). The structures nothing reads after load become lazy
// properties (`vocab`, `merges`, `bpe_ranks` rebuilt on first access, equal in content) or
// throwing ones (`config.vocab`/`config.merges`, the JSON the constructor read).
// Applied only where the tables are checked equal to the library's, entry by entry, at load
// (every token's id both ways, every merge's rank); otherwise the model is left as it was.
// O(vocab + merges) once at load (~0.1 s for Qwen).
import { CompactRanks, CompactVocab } from './compact-vocab.ts';

interface BpeNode {
  token: string;
  bias: number;
  score?: number;
  next: BpeNode;
}

interface BpeModelLike {
  tokens_to_ids: unknown;
  vocab: unknown;
  merges: unknown;
  bpe_ranks: unknown;
  config: unknown;
  unk_token?: unknown;
  bpe?: unknown;
  _add_node?: unknown;
  convert_ids_to_tokens?: unknown;
  convert_tokens_to_ids?: unknown;
}

export type CompactOutcome = 'compacted' | 'not-bpe' | 'overridden' | 'differs';

/** A read-only Map<string, number> over the compact vocabulary, iterated in the original map's order. */
export class CompactTokenIds {
  constructor(
    private readonly vocab: CompactVocab,
    /** Ids in the original map's iteration order. */
    private readonly order: Int32Array,
  ) {}

  get size(): number {
    return this.order.length;
  }

  get(key: unknown): number | undefined {
    return typeof key === 'string' ? this.vocab.id(key) : undefined;
  }

  has(key: unknown): boolean {
    return typeof key === 'string' && this.vocab.id(key) !== undefined;
  }

  *entries(): IterableIterator<[string, number]> {
    for (const id of this.order) yield [this.vocab.token(id) as string, id];
  }

  *keys(): IterableIterator<string> {
    for (const id of this.order) yield this.vocab.token(id) as string;
  }

  *values(): IterableIterator<number> {
    yield* this.order;
  }

  [Symbol.iterator](): IterableIterator<[string, number]> {
    return this.entries();
  }

  forEach(fn: (value: number, key: string, map: this) => void): void {
    for (const id of this.order) fn(id, this.vocab.token(id) as string, this);
  }

  set(): never {
    throw new TypeError('the compact vocabulary is read-only after load');
  }

  delete(): never {
    throw new TypeError('the compact vocabulary is read-only after load');
  }

  clear(): never {
    throw new TypeError('the compact vocabulary is read-only after load');
  }
}

/** True when `name` is defined once along the object's prototype chain and not on the object. */
function libraryMethod(obj: object, name: string): boolean {
  if (Object.hasOwn(obj, name)) return false;
  let n = 0;
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p))
    if (Object.hasOwn(p, name)) n++;
  return n === 1;
}

/** A property computed on first read (then a plain data property); writable like the one it replaces. */
function lazy<T>(obj: object, name: string, make: () => T): void {
  Object.defineProperty(obj, name, {
    configurable: true,
    enumerable: true,
    get: () => {
      const value = make();
      Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: true });
      return value;
    },
    set: (value: T) => {
      Object.defineProperty(obj, name, { value, writable: true, configurable: true, enumerable: true });
    },
  });
}

function isPair(x: unknown): x is [string, string] {
  return Array.isArray(x) && x.length === 2 && typeof x[0] === 'string' && typeof x[1] === 'string';
}

/** Replaces the model's tables by compact ones where they are provably equal; says what it did. */
export function compactBpeModel(modelArg: unknown): CompactOutcome {
  const model = modelArg as BpeModelLike;
  if (!model || (typeof model !== 'object' && typeof model !== 'function')) return 'not-bpe';
  const { tokens_to_ids: map, vocab: array, merges, bpe_ranks: ranksMap } = model;
  if (!(map instanceof Map) || !Array.isArray(array) || !Array.isArray(merges) || !(ranksMap instanceof Map))
    return 'not-bpe';
  if (typeof model.bpe !== 'function') return 'not-bpe';
  for (const m of ['_add_node', 'convert_ids_to_tokens', 'convert_tokens_to_ids'])
    if (!libraryMethod(model, m)) return 'overridden';

  let vocab: CompactVocab;
  try {
    vocab = new CompactVocab(array as (string | undefined)[]);
  } catch {
    return 'differs'; // two ids with one string: the map cannot be the array's inverse
  }
  // The map is the array's inverse: same entries both ways.
  if (map.size !== vocab.size) return 'differs';
  const order = new Int32Array(map.size);
  let k = 0;
  for (const [key, id] of map) {
    if (typeof key !== 'string' || vocab.id(key) !== id) return 'differs';
    order[k++] = id;
  }
  const pairs = new Int32Array(2 * merges.length);
  for (let r = 0; r < merges.length; r++) {
    const m: unknown = merges[r];
    if (!isPair(m)) return 'differs';
    const a = vocab.id(m[0]);
    const b = vocab.id(m[1]);
    if (a === undefined || b === undefined) return 'differs';
    pairs[2 * r] = a;
    pairs[2 * r + 1] = b;
  }
  // Every merge's rank as the library's Map has it (a repeated merge keeps its last rank in both),
  // and no other key there: the distinct pairs are as many as its keys.
  const ranks = new CompactRanks(pairs);
  if (ranks.size !== ranksMap.size) return 'differs';
  for (let r = 0; r < merges.length; r++)
    if (ranks.get(pairs[2 * r], pairs[2 * r + 1]) !== ranksMap.get(JSON.stringify(merges[r]))) return 'differs';

  // Equal: install. The library's _add_node with the rank from the pair table (a merge's parts are
  // all tokens, checked above, so a part that is no token has no rank, as before).
  const addNode = (queue: { push: (n: BpeNode) => unknown }, node: BpeNode): void => {
    const a = vocab.id(node.token);
    if (a === undefined) return;
    const b = vocab.id(node.next.token);
    if (b === undefined) return;
    const rank = ranks.get(a, b);
    if (rank !== undefined) {
      node.score = rank + node.bias;
      queue.push(node);
    }
  };
  const length = array.length;
  const tokenIds = new CompactTokenIds(vocab, order);
  const self = model as BpeModelLike & Record<string, unknown>;
  self._add_node = addNode;
  self.tokens_to_ids = tokenIds;
  self.convert_ids_to_tokens = (ids: unknown[]): unknown[] =>
    ids.map((t) => (typeof t === 'number' ? vocab.token(t) : (self.vocab as unknown[])[t as number]) ?? self.unk_token);
  lazy(self, 'vocab', () => {
    const out = new Array<string>(length);
    for (let i = 0; i < length; i++) {
      const t = vocab.token(i);
      if (t !== undefined) out[i] = t;
    }
    return out;
  });
  lazy(self, 'merges', () => {
    const out: [string, string][] = [];
    for (let r = 0; r < pairs.length; r += 2)
      out.push([vocab.token(pairs[r]) as string, vocab.token(pairs[r + 1]) as string]);
    return out;
  });
  lazy(self, 'bpe_ranks', () => new Map((self.merges as [string, string][]).map((x, i) => [JSON.stringify(x), i])));
  const config = self.config;
  if (config && typeof config === 'object') {
    const rest: Record<string, unknown> = { ...(config as Record<string, unknown>) };
    for (const key of ['vocab', 'merges'])
      Object.defineProperty(rest, key, {
        enumerable: true,
        get: () => {
          throw new Error(`tokenizer model config.${key} was released after load (compact-bpe-model.ts)`);
        },
      });
    self.config = rest;
  }
  return 'compacted';
}
