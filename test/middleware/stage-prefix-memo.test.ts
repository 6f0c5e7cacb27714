// stabilise and canonical_tools skip the messages a call shares, object for object, with the call
// that wrote their stored state. That shortcut must give exactly what the full pass gives: the same
// session is run twice in lockstep, once handing each call the very (frozen) state the last call
// wrote (the shortcut), once a deep copy of it (a state no call wrote here: the full pass), under
// seeded edits of the history: appends, elisions, edits, argument key flips, JSON-equal copies of
// resent messages, rewinds, and states a compaction would replace.
import { describe, expect, it } from 'vitest';
import { freezeDeep } from '../../middleware/deep-freeze.ts';
import { mulberry32 } from '../../kvplanner/rng.ts';
import { canonicalToolsStage } from '../../middleware/layout/canonical-tools-stage.ts';
import { forgetBelow, stabilise, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { RequestView, StageContext, StageResult } from '../../middleware/stage.ts';
import type { SessionState } from '../../middleware/session/store.ts';
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';

const output = (k: number, lines: number): string =>
  Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}\tdef f_${k}_${i}(x): return x + ${i}`).join(
    '\n',
  );

function turn(k: number, flip: boolean): ChatMessage[] {
  const base = flip ? { timeout: 30, path: `src/m${k}.py` } : { path: `src/m${k}.py`, timeout: 30 };
  // every 7th turn brings a key no call had: the stored (frozen) orders must learn it
  const args = k % 7 === 0 ? { [`opt_${k}`]: true, ...base } : base;
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `call_${k}`, type: 'function', function: { name: 'read', arguments: JSON.stringify(args) } }],
    } as ChatMessage,
    { role: 'tool', tool_call_id: `call_${k}`, content: output(k, 12 + (k % 5)) },
  ];
}

/** Seeded call-by-call histories; resent messages stay the same objects unless an edit replaces them. */
function histories(seed: number, calls: number): ChatMessage[][] {
  const rng = mulberry32(seed);
  let msgs: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the failing test.' },
  ];
  const out: ChatMessage[][] = [];
  let k = 0;
  for (let c = 0; c < calls; c++) {
    msgs = msgs.slice();
    const r = rng();
    const tools = msgs.map((m, i) => (m.role === 'tool' ? i : -1)).filter((i) => i >= 0);
    const at = tools.length ? tools[Math.floor(rng() * tools.length)] : -1;
    if (r < 0.15 && at > 0) msgs[at] = { ...msgs[at], content: '[output elided]' };
    else if (r < 0.22 && at > 0) msgs[at] = { ...msgs[at], content: `${msgs[at].content} edited` };
    else if (r < 0.3 && at > 0) msgs[at - 1] = turn(Number(msgs[at].tool_call_id!.slice(5)), rng() < 0.5)[0];
    else if (r < 0.38 && msgs.length > 2) {
      const i = 2 + Math.floor(rng() * (msgs.length - 2));
      msgs[i] = structuredClone(msgs[i]);
    } else if (r < 0.43 && msgs.length > 6) msgs = msgs.slice(0, msgs.length - 2 * (1 + Math.floor(rng() * 2)));
    msgs.push(...turn(++k, rng() < 0.2));
    out.push(msgs);
  }
  return out;
}

const ctx = { newSession: false, transforms: {} } as unknown as StageContext;

describe('stage shortcuts over shared history', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`stabilise gives what the full pass gives (seed ${seed})`, () => {
      const actions = new Set<string>();
      let memo: StabiliseState | undefined;
      let full: StabiliseState | undefined;
      histories(seed, 60).forEach((input, c) => {
        const a = stabilise(input, memo, { maxBytes: 6000 });
        const b = stabilise(input, full === undefined ? undefined : structuredClone(full), { maxBytes: 6000 });
        expect(JSON.stringify(a.messages), `call ${c}`).toBe(JSON.stringify(b.messages));
        expect(a.receipts, `call ${c}`).toEqual(b.receipts);
        for (const r of a.receipts) actions.add(r.action);
        expect(JSON.stringify(a.state), `call ${c}`).toBe(JSON.stringify(b.state));
        // every 9th call a compaction replaces the state (a state this stage did not write)
        memo = freezeDeep(c % 9 === 8 ? forgetBelow(a.state, 4) : a.state);
        full = c % 9 === 8 ? forgetBelow(b.state, 4) : b.state;
      });
      expect([...actions].sort()).toEqual(['defer_elision', 'edit_passed', 'history_truncated']);
    });

    it(`canonical_tools gives what the full pass gives (seed ${seed})`, () => {
      const view = (messages: ChatMessage[], session: SessionState): RequestView => ({
        body: { model: 'm', messages } as ChatRequest,
        segments: {
          root: { start: 0, end: 1 },
          trunk: { start: 1, end: 2 },
          leaf: { start: 2, end: 2 },
          messageHashes: [],
        },
        session,
        notes: [],
      });
      const actions = new Set<string>();
      let memo = { stages: {} } as SessionState;
      let full = { stages: {} } as SessionState;
      histories(seed + 100, 60).forEach((input, c) => {
        const a = canonicalToolsStage.run(view(input, { ...memo, stages: { ...memo.stages } }), ctx) as StageResult;
        const b = canonicalToolsStage.run(view(input, structuredClone(full)), ctx) as StageResult;
        expect(JSON.stringify(a.view.body), `call ${c}`).toBe(JSON.stringify(b.view.body));
        expect(a.receipts, `call ${c}`).toEqual(b.receipts);
        for (const r of a.receipts) actions.add(r.action);
        expect(JSON.stringify(a.view.session.stages), `call ${c}`).toBe(JSON.stringify(b.view.session.stages));
        for (const k of Object.keys(a.view.session.stages ?? {})) freezeDeep(a.view.session.stages![k]);
        memo = a.view.session;
        full = b.view.session;
      });
      expect([...actions]).toEqual(['reorder']);
    });
  }
});
