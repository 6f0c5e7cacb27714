// The per-call shortcuts of the pipeline (hashes carried from the previous call, prompt ids reused
// up to the last shared cut, window render reused, trailing note cut off) must give exactly what a
// from-scratch computation gives: ids equal to whole-prompt encoding on every call of long
// sessions, edits still detected, segment reuse equal to full tokenisation for arbitrary texts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sameJson, segment } from '../../middleware/layout/segmentation.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { ChatRenderer } from '../../middleware/tokens/handle.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import { tokenizeBySegments } from '../../middleware/tokens/segment-tokens.ts';
import type { ChatMessage, ChatRequest, PipelineContext } from '../../middleware/types.ts';
import { bashTools } from '../helpers/bash-tool.ts';

const tools = bashTools;
const ctx = (i: number): PipelineContext => ({
  tenant: 't',
  requestId: `r${i}`,
  headers: { 'x-session-id': 'long' },
  model: 'm',
});
const sys = (i: number) =>
  `Current date: 2026-11-30T03:${String(i % 60).padStart(2, '0')}:00Z\nYou are a coding agent.`;

describe('incremental reuse', () => {
  for (const tokenizer of ['qwen3', 'deepseek_v3', 'llama3_1', 'cl100k_base', 'o200k_base']) {
    it(`${tokenizer}: ids equal whole-prompt encoding on every call of a long session, edits included`, async () => {
      const tok = await loadTokenizer(tokenizer);
      // The reference is the jinja interpreter's whole-prompt render (not a native rendering).
      const interpreter = new ChatRenderer(tok.templateSource, tok.bosToken, tok.eosToken);
      const p = createPipeline({ model: 'm', tokenizer });
      const history: ChatMessage[] = [{ role: 'user', content: 'Fix the failing test.' }];
      for (let i = 0; i < 40; i++) {
        history.push({
          role: 'assistant',
          content: `step ${i}`,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${i}"}` } }],
        });
        history.push({ role: 'tool', tool_call_id: `c${i}`, content: `out ${i}\n`.repeat(3) });
        const messages = structuredClone(history);
        // Call 25 edits an old message; call 32 drops the tail of the history: both must be seen.
        if (i === 25) messages[3] = { ...messages[3], content: 'edited output' };
        const req: ChatRequest = {
          model: 'm',
          messages: [{ role: 'system', content: sys(i) }, ...(i === 32 ? messages.slice(0, 20) : messages)],
          tools,
        };
        const r = await p.process(req, ctx(i));
        expect(Array.from(r.promptTokenIds!)).toEqual(
          tok.encode(interpreter.interpret(r.body.messages, { tools: r.body.tools })),
        );
        if (i === 25) expect([r.prefix?.break_cause, r.prefix?.break_message_index]).toEqual(['history_edited', 4]);
        else if (i === 26) expect(r.prefix?.break_cause).toBe('history_edited');
        else if (i === 32) expect(r.prefix?.break_cause).toBe('truncated');
        // Call 2 breaks once where the clock line changed (learned, not guessed); then it stays cached.
        else if (i === 1) expect(r.prefix?.break_cause).toBe('system_changed');
        else if (i > 0 && i !== 33) expect(r.prefix?.break_cause).toBe('none');
      }
    });
  }

  it('segment reuse equals whole-text tokenisation for arbitrary texts around special tokens', async () => {
    const tok = await loadTokenizer('qwen3');
    const chunk = fc.oneof(
      fc.constantFrom('<|im_start|>', '<|im_end|>', '\n', 'user\n', 'assistant\n', '<tool_call>', ' ', '  x'),
      fc.string({ maxLength: 12 }),
    );
    const text = fc.array(chunk, { maxLength: 12 }).map((xs) => xs.join(''));
    await fc.assert(
      fc.property(text, text, text, (prefix, a, b) => {
        const first = tokenizeBySegments(tok, prefix + a);
        const second = prefix + b;
        const reused = tokenizeBySegments(tok, second, second.length, {
          ids: first.ids,
          cuts: first.cuts,
          sharedChars: prefix.length,
        });
        expect(Array.from(reused.ids)).toEqual(tok.encode(second));
        expect(reused.ids).toEqual(tokenizeBySegments(tok, second).ids);
        expect(reused.tokensBeforeMark).toBe(reused.ids.length);
        // Packed ids own their whole buffer (a pool thread transfers it; a view would hand over more).
        for (const r of [first, reused])
          expect([r.ids.byteOffset, r.ids.buffer.byteLength]).toEqual([0, r.ids.length * 4]);
        // Previous ids given as a plain array are copied the same way.
        const fromPlain = tokenizeBySegments(tok, second, second.length, {
          ids: Array.from(first.ids),
          cuts: first.cuts,
          sharedChars: prefix.length,
        });
        expect(fromPlain).toEqual(reused);
      }),
      { numRuns: 150 },
    );
  });

  it('carried hashes equal computed ones and never hide a change', () => {
    const a: ChatMessage[] = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u', name: 'x' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: '1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    ];
    const prev = segment(a);
    const same = segment(structuredClone(a), [{ messages: a, hashes: prev.messageHashes }]);
    expect(same.messageHashes).toEqual(prev.messageHashes);
    const reordered: ChatMessage[] = [a[0], { name: 'x', role: 'user', content: 'u' }, { ...a[2], content: '' }];
    const changed = segment(reordered, [{ messages: a, hashes: prev.messageHashes }]);
    expect(changed.messageHashes[0]).toBe(prev.messageHashes[0]);
    expect(changed.messageHashes[1]).not.toBe(prev.messageHashes[1]);
    expect(changed.messageHashes[2]).not.toBe(prev.messageHashes[2]);
    expect(changed.messageHashes).toEqual(segment(structuredClone(reordered)).messageHashes);
  });

  it('sameJson agrees with JSON.stringify equality', () => {
    const v = fc.jsonValue();
    fc.assert(
      fc.property(v, v, (x, y) => {
        // A true answer must always be right; for plain JSON values it is exact.
        expect(sameJson(x, y)).toBe(JSON.stringify(x) === JSON.stringify(y));
        expect(sameJson(x, structuredClone(x))).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: undefined }, {})).toBe(false);
    expect(sameJson([undefined], [null])).toBe(false);
    expect(sameJson(new Date(0), new Date(0))).toBe(false);
  });
});
