// Anthropic Messages shapes Claude Code sends that the plain API reference does not show: a system
// turn between user turns (environment notes) and tool_reference blocks in a tool search result.
import { describe, expect, it } from 'vitest';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';

const ctx = { tenant: 't', maxMessages: 100 };

describe('anthropic ingress: Claude Code shapes', () => {
  it('a system turn inside messages stays a system message in place, text verbatim', () => {
    const r = parseAnthropic(
      {
        model: 'm',
        max_tokens: 100,
        system: [{ type: 'text', text: 'You are an agent.' }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'hi' }] },
          {
            role: 'system',
            content: [
              { type: 'text', text: '# Environment\n - Primary working directory: /w' },
              { type: 'text', text: '  indented line' },
            ],
          },
          { role: 'assistant', content: 'ok' },
        ],
      },
      ctx,
    );
    expect(r.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'system', 'assistant']);
    expect(r.body.messages[2].content).toBe('# Environment\n - Primary working directory: /w\n  indented line');
  });

  it('tool_reference blocks in a tool result become lines naming the tools; other unknown blocks are still refused', () => {
    const body = (inner: unknown[]) => ({
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'find a tool' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ToolSearch', input: { query: 'read' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: inner }] },
      ],
    });
    const r = parseAnthropic(
      body([
        { type: 'tool_reference', tool_name: 'Read' },
        { type: 'tool_reference', tool_name: 'Grep' },
      ]),
      ctx,
    );
    expect(r.body.messages[2]).toEqual({
      role: 'tool',
      tool_call_id: 't1',
      content: 'tool_reference: Read\ntool_reference: Grep',
    });
    expect(() => parseAnthropic(body([{ type: 'tool_reference' }]), ctx)).toThrow(/text must be a string/);
    expect(() => parseAnthropic(body([{ type: 'mystery', text: 1 }]), ctx)).toThrow(/text must be a string/);
    expect(() =>
      parseAnthropic({ model: 'm', max_tokens: 5, messages: [{ role: 'tool', content: 'x' }] }, ctx),
    ).toThrow(/role must be 'user', 'assistant' or 'system'/);
  });
});
