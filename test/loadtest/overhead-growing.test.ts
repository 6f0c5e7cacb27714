import { describe, expect, it } from 'vitest';
import { GrowingTraffic, sessionBodies } from '../../loadtest/overhead/growing-sessions.ts';
import { formatStageTable, perRequest, untimedMs } from '../../loadtest/overhead/stage-table.ts';
import { identifySession } from '../../middleware/layout/session-id.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const parse = (s: string): ChatRequest => JSON.parse(s) as ChatRequest;
const sid = (b: ChatRequest): string =>
  identifySession(b, { tenant: 't', headers: {} }).parent ?? identifySession(b, { tenant: 't', headers: {} }).id;

describe('bench overhead: growing sessions', () => {
  it('each call resends the previous messages verbatim and adds one tool call and its output', () => {
    const calls = sessionBodies(3, { slots: 4, model: 'm', calls: 6 }).map(([h, t]) => parse(`${h}3-0${t}`));
    expect(calls).toHaveLength(6);
    expect(calls[0].messages.map((m) => m.role)).toEqual(['system', 'user']);
    for (let k = 1; k < calls.length; k++) {
      const prev = calls[k - 1].messages;
      const cur = calls[k].messages;
      expect(cur.slice(0, prev.length)).toEqual(prev);
      expect(cur.slice(prev.length).map((m) => m.role)).toEqual(['assistant', 'tool']);
      const out = String(cur[cur.length - 1].content);
      expect(out.length).toBeGreaterThan(1500);
      expect(out.length).toBeLessThan(2000);
    }
  });

  it('round-robins over slots, restarts a slot as a new session after its last call, renew() starts new sessions', () => {
    const t = new GrowingTraffic({ slots: 2, model: 'm', calls: 3 });
    const seq = Array.from({ length: 8 }, () => parse(t.next()));
    // slot 0: calls 0,1,2 then a new session at call 0; slot 1 likewise
    expect(seq.map((b) => b.messages.length)).toEqual([2, 2, 4, 4, 6, 6, 2, 2]);
    expect(sid(seq[0])).toBe(sid(seq[2]));
    expect(sid(seq[0])).not.toBe(sid(seq[1]));
    expect(sid(seq[6])).not.toBe(sid(seq[0]));
    t.renew();
    const after = parse(t.next());
    expect(after.messages.length).toBe(2);
    expect(sid(after)).not.toBe(sid(seq[6]));
  });

  it('prime() brings slot s to call s × calls / slots, each session in call order, and next() continues from there', () => {
    const t = new GrowingTraffic({ slots: 4, model: 'm', calls: 8 });
    t.renew();
    const primer = t.prime().map(parse);
    // slots start at calls 0, 2, 4, 6: 0 + 2 + 4 + 6 primed calls
    expect(primer).toHaveLength(12);
    const bySession = new Map<string, number[]>();
    for (const b of primer) bySession.set(sid(b), [...(bySession.get(sid(b)) ?? []), b.messages.length]);
    expect([...bySession.values()].map((v) => v.length).sort()).toEqual([2, 4, 6]);
    for (const lens of bySession.values()) expect(lens).toEqual(lens.map((_, i) => 2 + 2 * i));
    const next = Array.from({ length: 4 }, () => parse(t.next()));
    expect(next.map((b) => b.messages.length)).toEqual([2, 6, 10, 14]);
    for (const b of next.slice(1)) expect(bySession.get(sid(b))?.at(-1)).toBe(b.messages.length - 2);
  });

  it("each new session (a slot's round) reads files of its own content, deterministically; bodies built as the session grows equal sessionBodies byte for byte", () => {
    for (const stream of [false, true]) {
      const o = { slots: 3, model: 'm', calls: 5, stream };
      const a = new GrowingTraffic(o);
      const b = new GrowingTraffic(o);
      const seq = Array.from({ length: 3 * 5 * 3 }, () => a.next());
      expect(Array.from({ length: seq.length }, () => b.next())).toEqual(seq);
      // slot s's round r is call (r × 5 + k) × 3 + s of the sequence
      for (let r = 0; r < 3; r++)
        for (let s = 0; s < 3; s++) {
          const want = sessionBodies(s, o, r).map(([h, t]) => `${h}${s}-${r}${t}`);
          expect(want.map((_, k) => seq[(r * 5 + k) * 3 + s])).toEqual(want);
        }
      const outputs = (s: number, r: number): string[] =>
        parse(seq[(r * 5 + 4) * 3 + s])
          .messages.filter((m) => m.role === 'tool')
          .map((m) => String(m.content));
      const seen = new Set<string>();
      for (let r = 0; r < 3; r++)
        for (let s = 0; s < 3; s++)
          for (const out of outputs(s, r)) {
            expect(seen.has(out)).toBe(false);
            seen.add(out);
          }
    }
  });

  it('stage table: per-request milliseconds in request path order, with shares', () => {
    const ms = perRequest(
      { tokens: { ms: 30, n: 10 }, body_parse: { ms: 10, n: 10 }, 'stage:ledger': { ms: 20, n: 10 } },
      10,
    );
    expect(Object.keys(ms)).toEqual(['body_parse', 'stage:ledger', 'tokens']);
    expect(ms.tokens).toBeCloseTo(3);
    const table = formatStageTable(ms);
    expect(table).toMatch(/tokens\s+3000 µs\s+50\.0 %/);
    expect(table).toMatch(/total\s+6000 µs/);
    expect(table).not.toMatch(/not timed/);
    // With the run's main-thread CPU: what no timed section saw.
    const withCpu = formatStageTable(ms, 7.5);
    expect(withCpu).toMatch(/main thread CPU\s+7500 µs/);
    expect(withCpu).toMatch(/not timed\s+1500 µs/);
    expect(untimedMs(ms, 7.5)).toBeCloseTo(1.5);
    expect(untimedMs(ms, undefined)).toBeUndefined();
  });
});
