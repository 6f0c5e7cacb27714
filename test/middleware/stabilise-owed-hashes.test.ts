// The stabiliser's new-message hashes after the send (stabilise.ts oweHashes, settleHashes): the
// hash and identity of each message past the previous call's are the next call's to read, so the
// stage leaves them, and the lists' freeze, to an after-send job. The state must be the one
// stabilise gives without it (JSON, frozen, sized), over calls that grow, resend the same or
// copied objects, elide earlier outputs (deferred), edit, truncate and carry secrets; the messages
// and receipts are this call's either way.
import { describe, expect, it } from 'vitest';
import { AfterSendQueue } from '../../middleware/after-send.ts';
import { freezeDeep, isDeepFrozen, sizeOf } from '../../middleware/deep-freeze.ts';
import { settleHashes, settleOwed, stabilise, STABILISE_SLOT } from '../../middleware/stabilise/stabilise.ts';
import type { StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import { createStabiliseStage } from '../../middleware/stabilise/stage.ts';
import { readSlot } from '../../middleware/session/stage-state.ts';
import type { RequestView, StageContext } from '../../middleware/stage.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const SECRET = 'aws key AKIAIOSFODNN7EXAMPLE in the output';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

function turn(k: number, r: () => number): ChatMessage[] {
  const lines = Array.from({ length: 3 + Math.floor(r() * 6) }, (_, i) => `line ${i} of output ${k}`);
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${k}`, type: 'function', function: { name: 'run', arguments: `{"k":${k}}` } }],
    },
    { role: 'tool', tool_call_id: `c${k}`, content: `${lines.join('\n')}${r() < 0.15 ? `\n${SECRET}` : ''}` },
  ];
}

/** The next call's messages: the history (same objects, or copies), sometimes an earlier output
 *  elided or edited, or the history cut back, then one or two new turns. */
function nextCall(msgs: ChatMessage[], k: number, r: () => number): ChatMessage[] {
  let out = r() < 0.2 ? (JSON.parse(JSON.stringify(msgs)) as ChatMessage[]) : [...msgs];
  const x = r();
  const tools = out.map((m, i) => (m.role === 'tool' ? i : -1)).filter((i) => i >= 0 && i < out.length - 1);
  if (x < 0.2 && tools.length > 0) {
    const i = tools[Math.floor(r() * tools.length)];
    const text = String(out[i].content);
    out[i] = { ...out[i], content: `${text.slice(0, text.indexOf('\n') + 1)}[output elided]` };
  } else if (x < 0.3 && tools.length > 0) {
    const i = tools[Math.floor(r() * tools.length)];
    out[i] = { ...out[i], content: `something else entirely ${k}` };
  } else if (x < 0.37 && out.length > 6) out = out.slice(0, out.length - 2 * (1 + Math.floor(r() * 2)));
  out.push(...turn(k, r));
  if (r() < 0.3) out.push(...turn(1000 + k, r));
  return out;
}

describe('stabilise: new messages hashed after the send', () => {
  it('gives the state stabilise gives at once: JSON, frozen and sized; same messages and receipts', () => {
    let owedCalls = 0;
    for (const seed of [1, 2, 3, 4]) {
      const r = rng(seed);
      let msgs: ChatMessage[] = [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'task' },
      ];
      let a: StabiliseState | undefined;
      let b: StabiliseState | undefined;
      for (let k = 1; k <= 40; k++) {
        msgs = nextCall(msgs, k, r);
        const ra = stabilise(msgs, a, { oweSecretChecks: true });
        const rb = stabilise(msgs, b, { oweSecretChecks: true, oweHashes: true });
        expect(rb.messages).toEqual(ra.messages);
        expect(rb.receipts).toEqual(ra.receipts);
        expect(rb.owed).toEqual(ra.owed);
        if (rb.owedHashes) {
          owedCalls++;
          // left for after the send: the new messages' hashes are not there yet
          expect(rb.state.a.length).toBeLessThan(msgs.length);
          settleHashes(rb.state, rb.owedHashes);
        }
        const sa = ra.owed ? settleOwed(ra.state, ra.owed) : ra.state;
        const sb = rb.owed ? settleOwed(rb.state, rb.owed) : rb.state;
        expect(JSON.stringify(sb)).toBe(JSON.stringify(sa));
        for (const key of ['a', 'k'] as const) {
          const la = sa[key];
          const lb = sb[key];
          expect(lb === undefined).toBe(la === undefined);
          if (la === undefined || lb === undefined) continue;
          expect(isDeepFrozen(lb)).toBe(isDeepFrozen(la));
          if (isDeepFrozen(lb)) expect(sizeOf(lb)).toBe(sizeOf(JSON.parse(JSON.stringify(lb))));
        }
        // what a store does with the state it is given
        a = freezeDeep(sa);
        b = freezeDeep(sb);
      }
    }
    expect(owedCalls).toBeGreaterThan(100);
  });

  it('the stage leaves them to its after-send queue, and to nothing without one', async () => {
    const stage = createStabiliseStage({}, { oweHashes: true });
    const msgs: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      ...turn(1, rng(9)),
    ];
    const view = (): RequestView =>
      ({
        body: { model: 'm', messages: msgs },
        segments: undefined,
        session: { stages: {} },
        notes: [],
      }) as unknown as RequestView;
    const queue = new AfterSendQueue();
    const v1 = view();
    await stage.run(v1, { afterSend: queue.add.bind(queue) } as unknown as StageContext);
    expect(queue.pending).toBe(2); // the hashes, then the new original's secret check
    expect(readSlot(v1.session, STABILISE_SLOT)!.a.length).toBe(0);
    await queue.run();
    const v2 = view();
    await stage.run(v2, {} as StageContext);
    expect(JSON.stringify(readSlot(v1.session, STABILISE_SLOT))).toBe(
      JSON.stringify(readSlot(v2.session, STABILISE_SLOT)),
    );
    expect(readSlot(v2.session, STABILISE_SLOT)!.a.length).toBe(msgs.length);
  });
});
