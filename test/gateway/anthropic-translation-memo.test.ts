// The Anthropic adapter keeps each client message's translation per message object (the body
// parser hands out the same objects for an unchanged history): the same chat objects come out for
// the same message, the result is what a fresh translation of an equal copy gives, and what the
// signature checks read (tenant, the gateway's key) is never taken from another request's context.
// The tenant keys of the signatures are memoised too: a new secret still derives new keys.
import { describe, expect, it } from 'vitest';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';
import { checkThinking, signThinking, tenantKey } from '../../gateway/ingress/thinking-signature.ts';
import type { ParseContext } from '../../gateway/ingress/types.ts';
import { createCacheSalts } from '../../gateway/tenancy/cache-salt.ts';

const saltsOf = (secret: string) => createCacheSalts({ cache_salt_secret: secret, cache_groups: [] } as never);
const macOf = (secret: string) => {
  const salts = saltsOf(secret);
  return (d: string): string => salts.mac('thinking-signature', d);
};
const mac = macOf('memo-test-secret');
const ctx = (tenant: string, m = mac): ParseContext => ({ tenant, maxMessages: 1000, mac: m });

function body(): Record<string, unknown> {
  const thought = 'The failing test reads the claims before the token is verified.';
  return {
    model: 'm',
    max_tokens: 16,
    system: [{ type: 'text', text: 'You are a coding agent.' }],
    tools: [
      { name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: {} } },
      { type: 'web_search_20250305', name: 'web_search' },
    ],
    messages: [
      { role: 'user', content: 'Fix the audience check.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: thought, signature: signThinking(mac, 'acme', thought) },
          { type: 'text', text: 'Reading it.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/a.py' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '1\tdef f():' }] },
          { type: 'text', text: 'Go on.' },
        ],
      },
      { role: 'system', content: [{ type: 'text', text: 'cwd: /repo' }] },
    ],
  };
}

const signatureReceipt = (r: ReturnType<typeof parseAnthropic>): string | undefined =>
  r.receipts?.find((x) => x.action === 'thinking_signatures')?.reason;

describe('anthropic translation memo', () => {
  it('gives the same chat objects for the same client messages, equal to a fresh translation', () => {
    const b = body();
    const first = parseAnthropic(b, ctx('acme'));
    const again = parseAnthropic(b, ctx('acme'));
    const fresh = parseAnthropic(structuredClone(b), ctx('acme'));
    expect(again.body.messages.length).toBe(first.body.messages.length);
    again.body.messages.forEach((m, i) => expect(m).toBe(first.body.messages[i]));
    expect(again.body.tools).toBe(first.body.tools);
    // Exact: byte for byte what translating an equal, never-seen copy gives (receipts included).
    expect(JSON.stringify(again.body)).toBe(JSON.stringify(fresh.body));
    expect(JSON.stringify(again.receipts)).toBe(JSON.stringify(fresh.receipts));
    expect(fresh.body.messages[0]).not.toBe(first.body.messages[0]);
    // The dropped server tool's receipt is given on every call, not only the first.
    expect(again.receipts?.filter((r) => r.action === 'tool_dropped')).toHaveLength(1);
    // A new message in a body that shares the others' objects is translated; the rest reused.
    const next = { ...b, messages: [...(b.messages as unknown[]), { role: 'user', content: 'And the test.' }] };
    const grown = parseAnthropic(next, ctx('acme'));
    first.body.messages.forEach((m, i) => expect(grown.body.messages[i]).toBe(m));
    expect(grown.body.messages.at(-1)).toEqual({ role: 'user', content: 'And the test.' });
  });

  it('checks signatures again under another tenant, another key or none, and agrees with checkThinking', () => {
    const b = body();
    const thinking = ((b.messages as { content: unknown }[])[1].content as Record<string, string>[])[0];
    expect(checkThinking(mac, 'acme', thinking.thinking, thinking.signature)).toBe('verified');
    const reasons = [
      signatureReceipt(parseAnthropic(b, ctx('acme'))),
      signatureReceipt(parseAnthropic(b, ctx('other'))),
      signatureReceipt(parseAnthropic(b, ctx('acme', macOf('rotated-secret')))),
      signatureReceipt(parseAnthropic(b, { tenant: 'acme', maxMessages: 1000 })),
      signatureReceipt(parseAnthropic(b, ctx('acme'))),
    ];
    expect(
      reasons.map((r) =>
        r?.match(/(\d+) signed by this gateway and verified, (\d+) signed elsewhere, (\d+) not/)?.slice(1),
      ),
    ).toEqual([
      ['1', '0', '0'],
      ['0', '0', '1'],
      ['0', '0', '1'],
      ['0', '1', '0'],
      ['1', '0', '0'],
    ]);
  });

  it('translates an invalid message with an error every time, never from a memo', () => {
    const bad = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'document' }] }] };
    expect(() => parseAnthropic(bad, ctx('acme'))).toThrow(/document blocks/);
    expect(() => parseAnthropic(bad, ctx('acme'))).toThrow(/document blocks/);
  });

  it('derives tenant keys per secret, label and tenant (memoised, never shared across them)', () => {
    const other = macOf('another-secret');
    const k = tenantKey(mac, 'thinking-key', 'acme');
    expect(tenantKey(mac, 'thinking-key', 'acme')).toBe(k);
    expect(tenantKey(other, 'thinking-key', 'acme').equals(k)).toBe(false);
    expect(tenantKey(mac, 'thinking-key', 'acme2').equals(k)).toBe(false);
    expect(tenantKey(mac, 'reasoning-seal-key', 'acme').equals(k)).toBe(false);
    expect(signThinking(other, 'acme', 'x')).not.toBe(signThinking(mac, 'acme', 'x'));
  });
});
