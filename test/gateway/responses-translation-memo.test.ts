// The Responses adapter keeps the translation of each run of input items (from one boundary to the
// next: no reasoning pending, no call joining the turn before) per first item object. The same
// chat objects come out for the same items; every result equals a fresh translation of an equal
// copy; a kept message is never changed by a later call (a call appended after a kept assistant
// message makes that run again); a sealed reasoning item opens under the tenant and key of the
// request at hand only.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sealReasoning } from '../../gateway/ingress/reasoning-seal.ts';
import { parseResponses } from '../../gateway/ingress/responses-request.ts';
import { MemoryResponseStore } from '../../gateway/ingress/responses-store.ts';
import type { ParseContext } from '../../gateway/ingress/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const macOf =
  (secret: string) =>
  (data: string): string =>
    createHmac('sha256', secret).update(data).digest('base64url');
const mac = macOf('memo-test-key');
const store = new MemoryResponseStore({ ttlSeconds: 60, maxEntryBytes: 1 << 20, maxBytes: 1 << 22 });
const ctx = (tenant: string, m: ParseContext['mac'] = mac): ParseContext => ({ tenant, maxMessages: 1000, mac: m });
const parse = (body: unknown, c = ctx('acme')) => parseResponses(body, c, store, () => 'resp_1');
const json = (r: Awaited<ReturnType<typeof parse>>): string => JSON.stringify([r.body, r.receipts]);

const input = (): unknown[] => [
  { role: 'user', content: 'Fix the audience check.' },
  { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Read claims.py first.' }] },
  { type: 'function_call', call_id: 'c1', name: 'read_file', arguments: '{"path":"a.py"}' },
  { type: 'function_call', call_id: 'c2', name: 'read_file', arguments: '{"path":"b.py"}' },
  { type: 'function_call_output', call_id: 'c1', output: '1\tdef f():' },
  { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: '1\tdef g():' }] },
  { type: 'reasoning', summary: [] },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Both read.' }] },
];
const body = (items: unknown[]) => ({ model: 'm', instructions: 'Be brief.', input: items });

describe('responses translation memo', () => {
  it('gives the same chat objects for the same items, equal to a fresh translation', async () => {
    const items = input();
    const first = await parse(body(items));
    const again = await parse(body(items));
    const fresh = await parse(body(structuredClone(items)));
    expect(json(again)).toBe(json(fresh));
    expect(json(first)).toBe(json(fresh));
    // the instructions' system message is made per call; every translated message is shared
    again.body.messages.slice(1).forEach((m, i) => expect(m).toBe(first.body.messages[i + 1]));
    expect(fresh.body.messages[1]).not.toBe(first.body.messages[1]);
    // the dropped reasoning item's receipt names its index on every call
    expect(again.receipts?.filter((r) => r.action === 'reasoning_dropped').map((r) => r.target)).toEqual(['input[6]']);
  });

  it('never changes a kept message: a call appended after a kept assistant turn joins a new copy', async () => {
    const items = input();
    const first = await parse(body(items));
    const kept = first.body.messages.at(-1);
    const more = [...items, { type: 'function_call', call_id: 'c3', name: 'read_file', arguments: '{}' }];
    const next = await parse(body(more));
    expect(json(next)).toBe(json(await parse(body(structuredClone(more)))));
    expect(next.body.messages.at(-1)?.tool_calls?.map((c) => c.id)).toEqual(['c3']);
    expect(kept?.tool_calls).toBeUndefined();
    expect(JSON.stringify(first.body)).toBe(JSON.stringify((await parse(body(structuredClone(items)))).body));
    // the same items at other indexes: translated there, receipts naming the new index
    const shifted = [{ role: 'user', content: 'Before.' }, ...items];
    const s = await parse(body(shifted));
    expect(json(s)).toBe(json(await parse(body(structuredClone(shifted)))));
    // reasoning pending at the end of one call flows into the next call's assistant turn
    const cut = items.slice(0, 2);
    const c1 = await parse(body(cut));
    expect(c1.receipts?.some((r) => r.target === 'input' && r.action === 'reasoning_dropped')).toBe(true);
    const grown = [...cut, { type: 'message', role: 'assistant', content: 'Done.' }];
    expect(json(await parse(body(grown)))).toBe(json(await parse(body(structuredClone(grown)))));
    expect((await parse(body(grown))).body.messages.at(-1)?.reasoning_content).toBe('Read claims.py first.');
  });

  // A reasoning item between two parts of one assistant turn: the call after it joins the turn
  // before it. Every message handed out is frozen (with its tool_calls) before the next call, so
  // any later in-place write throws instead of passing silently.
  const freezeAll = (r: Awaited<ReturnType<typeof parse>>): void => {
    for (const m of r.body.messages) {
      if (m.tool_calls) Object.freeze(m.tool_calls);
      Object.freeze(m);
    }
  };
  const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'read_file', arguments: `{"p":"${id}"}` });
  const think = (text: string) => ({ type: 'reasoning', summary: [{ type: 'summary_text', text }] });
  const shapes: Record<string, unknown[]> = {
    'call, reasoning, call': [
      { role: 'user', content: 'Read both.' },
      call('c1'),
      think('Also b.py.'),
      call('c2'),
      { type: 'function_call_output', call_id: 'c1', output: 'A' },
      { type: 'function_call_output', call_id: 'c2', output: 'B' },
      { role: 'user', content: 'And?' },
    ],
    'message, reasoning, call': [
      { role: 'user', content: 'Look.' },
      { type: 'message', role: 'assistant', content: 'Looking.' },
      think('Now read it.'),
      call('c1'),
      { type: 'function_call_output', call_id: 'c1', output: 'A' },
      think('One more.'),
      call('c2'),
      { type: 'function_call_output', call_id: 'c2', output: 'B' },
    ],
  };
  for (const [name, items] of Object.entries(shapes))
    it(`resends [${name}] unchanged: the same translation every time, equal to a fresh one`, async () => {
      const fresh = json(await parse(body(structuredClone(items))));
      const seen: string[] = [];
      for (let k = 0; k < 4; k++) {
        const r = await parse(body(items));
        seen.push(json(r));
        freezeAll(r);
      }
      expect(seen).toEqual([fresh, fresh, fresh, fresh]);
      const turn = JSON.parse(fresh)[0].messages.find((m: { tool_calls?: unknown[] }) => m.tool_calls);
      expect(turn.tool_calls.length).toBe(name.startsWith('call') ? 2 : 1);
    });

  it('joins a call after a stored previous_response_id turn on a copy, the same on every resend', async () => {
    const prevStore = new MemoryResponseStore({ ttlSeconds: 60, maxEntryBytes: 1 << 20, maxBytes: 1 << 22 });
    await prevStore.put('acme', 'resp_prev', {
      response: {},
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'looking' },
      ],
    });
    const items = [think('Read it.'), call('c1'), { type: 'function_call_output', call_id: 'c1', output: 'o' }];
    const b = (it: unknown[]) => ({ model: 'm', previous_response_id: 'resp_prev', input: it });
    const p = (x: unknown) => parseResponses(x, ctx('acme'), prevStore, () => 'resp_2');
    const fresh = json(await p(b(structuredClone(items))));
    expect(JSON.parse(fresh)[0].messages.map((m: ChatMessage) => [m.role, m.tool_calls?.length ?? 0])).toEqual([
      ['user', 0],
      ['assistant', 1],
      ['tool', 0],
    ]);
    // the same items first without previous_response_id: their runs are kept, then reused after it
    const alone = await parse(body(items));
    freezeAll(alone);
    for (let k = 0; k < 3; k++) {
      const r = await p(b(items));
      expect(json(r)).toBe(fresh);
      freezeAll(r);
    }
    expect(json(await parse(body(items)))).toBe(json(await parse(body(structuredClone(items)))));
  });

  it('opens a sealed reasoning item under the request tenant and key only', async () => {
    const sealed = [
      { role: 'user', content: 'Go.' },
      { type: 'reasoning', summary: [], encrypted_content: sealReasoning(mac, 'acme', 'Check the order.') },
      { type: 'message', role: 'assistant', content: 'Done.' },
    ];
    const b = body(sealed);
    const runs = [
      await parse(b, ctx('acme')),
      await parse(b, ctx('other')),
      await parse(b, ctx('acme', macOf('rotated'))),
      await parse(b, { tenant: 'acme', maxMessages: 1000 }),
      await parse(b, ctx('acme')),
    ];
    expect(runs.map((r) => r.body.messages.at(-1)?.reasoning_content ?? null)).toEqual([
      'Check the order.',
      null,
      null,
      null,
      'Check the order.',
    ]);
    for (const [i, c] of [
      ctx('acme'),
      ctx('other'),
      ctx('acme', macOf('rotated')),
      { tenant: 'acme', maxMessages: 1000 },
    ].entries())
      expect(json(runs[i])).toBe(json(await parse(body(structuredClone(sealed)), c)));
  });
});
