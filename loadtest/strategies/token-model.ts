// Token-level view of a staged prompt for the strategy bench: per-message token ids with the
// real tokenizer (memoised by text: special tokens of the chat template separate messages, so
// per-message encoding matches a full render up to the template's own tokens), and a prefix
// cache model over consecutive calls: cached = longest common token prefix with the previous
// call of the session, floored to the KV block size. O(new text) per call.
import type { ChatMessage, ToolDef } from '../../middleware/types.ts';

export const MESSAGE_OVERHEAD_TOKENS = 4;

export interface Encoder {
  encode(text: string): readonly number[];
}

export function messageKey(m: ChatMessage): string {
  const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
  const calls = m.tool_calls?.length
    ? JSON.stringify(m.tool_calls.map((t) => [t.function.name, t.function.arguments]))
    : '';
  return `${m.role}\u0000${content}\u0000${calls}\u0000${m.tool_call_id ?? ''}`;
}

export class TokenModel {
  private readonly cache = new Map<string, readonly number[]>();
  constructor(
    private readonly enc: Encoder,
    readonly blockSize: number,
  ) {}

  ids(key: string): readonly number[] {
    let v = this.cache.get(key);
    if (!v) {
      v = this.enc.encode(key.replace(/\u0000/g, '\n'));
      this.cache.set(key, v);
    }
    return v;
  }

  count(text: string): number {
    return this.ids(text).length;
  }

  sequence(messages: ChatMessage[], tools?: ToolDef[]): (readonly number[])[] {
    const seq: (readonly number[])[] = [];
    if (tools?.length) seq.push(this.ids(`tools\u0000${JSON.stringify(tools)}`));
    for (const m of messages) seq.push(this.ids(messageKey(m)));
    return seq;
  }

  static total(seq: (readonly number[])[]): number {
    return seq.reduce((a, s) => a + s.length + MESSAGE_OVERHEAD_TOKENS, 0);
  }

  /** Tokens of `cur` a prefix cache holding `prev` serves, floored to whole blocks. */
  cachedTokens(prev: (readonly number[])[] | undefined, cur: (readonly number[])[]): number {
    if (!prev) return 0;
    let lcp = 0;
    for (let i = 0; i < Math.min(prev.length, cur.length); i++) {
      const a = prev[i];
      const b = cur[i];
      if (a === b) {
        lcp += a.length + MESSAGE_OVERHEAD_TOKENS;
        continue;
      }
      let j = 0;
      while (j < a.length && j < b.length && a[j] === b[j]) j++;
      lcp += j + (j === a.length && j === b.length ? MESSAGE_OVERHEAD_TOKENS : 0);
      if (!(j === a.length && j === b.length)) break;
    }
    return Math.floor(lcp / this.blockSize) * this.blockSize;
  }
}
