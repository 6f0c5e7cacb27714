// The ledger in two steps (beginLedger, then finish): the messages and receipts come from the first
// step without the new tool outputs' token counts (they are the stage's BPE pass, left to finish,
// which may run after the upstream send), yet every count a receipt reads is the text's own count,
// and after finish every observation holds the count of its text, as the one-step ledger stored it.
import { describe, expect, it } from 'vitest';
import { beginLedger } from '../../middleware/ledger/ledger.ts';
import { messageText } from '../../middleware/ledger/message-text.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { buildSession, codeLines, randomSession, requestsOf } from './helpers/session-gen.ts';

/** A counter that records what it counted: ~4 characters a token, never 0 for a non-empty text. */
function spyCount() {
  const seen: string[] = [];
  const count = (t: string): number => {
    seen.push(t);
    return Math.ceil(t.length / 4);
  };
  return { seen, count };
}

/** Requests of `msgs` where each adds `per` tool calls at once (so a read and a later write of the
 *  same file can arrive in one request, the read then still uncounted when it goes stale). */
function batched(msgs: ChatMessage[], per: number): ChatMessage[][] {
  const all = requestsOf(msgs);
  return all.filter((_, i) => i % per === per - 1 || i === all.length - 1);
}

/** Parallel tool calls: `cat` then `sed -i` of the same file in one assistant turn. */
function sameTurnReadWrite(): ChatMessage[] {
  const msgs = buildSession('Fix it.', [{ cmd: 'ls', out: 'src' }]);
  msgs.push(
    {
      role: 'assistant',
      content: 'Both at once.',
      tool_calls: [
        { id: 'r', type: 'function', function: { name: 'bash', arguments: '{"command":"cat src/a.py"}' } },
        { id: 'w', type: 'function', function: { name: 'bash', arguments: `{"command":"sed -i 's/a/b/' src/a.py"}` } },
      ],
    },
    { role: 'tool', tool_call_id: 'r', content: codeLines('a', 25) },
    { role: 'tool', tool_call_id: 'w', content: '' },
  );
  return msgs;
}

function check(reqs: ChatMessage[][]): { tombstones: number; sameCall: number } {
  let state: LedgerState | undefined;
  let tombstones = 0;
  let sameCall = 0;
  for (const req of reqs) {
    const spy = spyCount();
    const r = beginLedger(req, state, { eviction: false, countTokens: spy.count, now: 1_000 });
    const placed = r.receipts.filter((x) => x.action === 'tombstone');
    const newTexts = new Set(
      r.state.observations.filter((o) => o.index >= (state?.seen ?? 0)).map((o) => messageText(req[o.index])),
    );
    // Nothing was placed: no new output was counted before finish (the deferred BPE pass).
    if (placed.length === 0) expect(spy.seen.filter((t) => newTexts.has(t) && t.length > 0)).toEqual([]);
    const before = state?.tombstones.length ?? 0;
    r.finish();
    // Every observation holds its text's count (the one-step ledger counted it when observed).
    for (const o of r.state.observations) expect(o.tokens).toBe(Math.ceil(messageText(req[o.index]).length / 4));
    // Each tombstone's carry figure was worked out from the stale text's own count.
    placed.forEach((x, j) => {
      const t = r.state.tombstones[before + j];
      const o = r.state.observations.find((k) => k.id === t.obs)!;
      if (o.index >= (state?.seen ?? 0)) sameCall++;
      const m = /evict (\d+) vs carry (\d+) over ~(\d+) calls/.exec(x.reason)!;
      const stale = Math.ceil(messageText(req[o.index]).length / 4);
      expect(Number(m[2])).toBe(Math.round(x.tokens_after! + stale * 0.1 * Number(m[3])));
      tombstones++;
    });
    // finish once only: a second call changes nothing.
    const json = JSON.stringify(r.state);
    r.finish();
    expect(JSON.stringify(r.state)).toBe(json);
    expect(Object.isFrozen(r.state.observations) || state === undefined).toBe(true);
    state = r.state;
  }
  return { tombstones, sameCall };
}

describe('ledger begin / finish', () => {
  it('a read written in the same turn: its tombstone receipt counts it at once', () => {
    const got = check(batched(sameTurnReadWrite(), 2));
    expect(got.sameCall).toBe(1);
  });

  it('random sessions, several calls a request: counts deferred, receipts and state as counted inline', () => {
    let tombstones = 0;
    let sameCall = 0;
    for (let seed = 1; seed <= 12; seed++) {
      for (const per of [1, 3]) {
        const got = check(batched(randomSession(seed, 40), per));
        tombstones += got.tombstones;
        sameCall += got.sameCall;
      }
    }
    expect(tombstones).toBeGreaterThan(20);
    expect(sameCall).toBeGreaterThan(0);
  });
});
