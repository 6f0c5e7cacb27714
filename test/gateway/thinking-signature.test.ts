// Thinking signatures: the gateway signs thinking it relays (whole answers and streams alike, the
// same signature for the same text), verifies its own on the way back in, and keeps every thinking
// block whatever its signature, so Claude Code's multi-turn thinking round-trips.
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { AnthropicStream, toAnthropicMessage } from '../../gateway/ingress/anthropic-answer.ts';
import { parseAnthropic } from '../../gateway/ingress/anthropic-request.ts';
import { checkThinking, signThinking } from '../../gateway/ingress/thinking-signature.ts';
import type { AnswerContext } from '../../gateway/ingress/types.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { createCacheSalts } from '../../gateway/tenancy/cache-salt.ts';
import { extractUsage } from '../../gateway/accounting/record/extract.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

const SECRET = 'thinking-signature-test-secret';
const salts = createCacheSalts({ cache_salt_secret: SECRET, cache_groups: [] } as never);
const mac = (d: string): string => salts.mac('thinking-signature', d);
const ctx: AnswerContext = {
  requestId: 'r',
  tenant: 't',
  promptTokens: 1,
  state: { model: 'm' },
  readUsage: extractUsage,
  mac,
};

describe('thinking signatures', () => {
  it('are deterministic, bound to the tenant and the text, and tell foreign from altered', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (text, extra) => {
        const s = signThinking(mac, 't', text);
        expect(signThinking(mac, 't', text)).toBe(s);
        expect(checkThinking(mac, 't', text, s)).toBe('verified');
        expect(checkThinking(mac, 't', text + extra, s)).toBe('altered');
        expect(checkThinking(mac, 'other', text, s)).toBe('altered');
      }),
    );
    expect(checkThinking(mac, 't', 'x', 'EqQBCkgIARABGAIiQL')).toBe('foreign');
    // tenant and text never run together: (acme, x\0P) and (acme\0x, P) sign differently
    const s1 = signThinking(mac, 'acme', 'x\u0000P');
    expect(signThinking(mac, 'acme\u0000x', 'P')).not.toBe(s1);
    expect(checkThinking(mac, 'acme\u0000x', 'P', s1)).toBe('altered');
    expect(checkThinking(mac, 't', 'x', '')).toBe('missing');
    // Another purpose's key never signs the same way.
    expect(salts.mac('other-label', 'thinking\u0000t\u0000x')).not.toBe(signThinking(mac, 't', 'x').slice(6));
  });

  it('a whole answer and its stream carry the same verifiable signature', () => {
    const reasoning = 'Let me think about the file layout first.';
    const whole = {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Done.', reasoning_content: reasoning },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 4 },
    };
    const msg = toAnthropicMessage(whole, extractUsage(whole), ctx);
    const thinking = (msg.content as { type: string; signature?: string }[])[0];
    expect(thinking.type).toBe('thinking');
    expect(checkThinking(mac, 't', reasoning, thinking.signature)).toBe('verified');

    const s = new AnthropicStream(ctx);
    let out = '';
    for (const piece of ['Let me think ', 'about the file layout first.'])
      out += s.chunk({ choices: [{ index: 0, delta: { reasoning_content: piece } }] });
    out += s.chunk({ choices: [{ index: 0, delta: { content: 'Done.' }, finish_reason: 'stop' }] });
    out += s.done();
    const deltas = out
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map(
        (l) => JSON.parse(l.slice(6)) as { type: string; index?: number; delta?: { type: string; signature?: string } },
      );
    const sig = deltas.filter((d) => d.delta?.type === 'signature_delta');
    expect(sig).toHaveLength(1);
    expect(sig[0].delta?.signature).toBe(thinking.signature);
    // The signature closes its block: it comes right before that block's stop.
    const at = deltas.indexOf(sig[0]);
    expect(deltas[at + 1]).toMatchObject({ type: 'content_block_stop', index: sig[0].index });
  });

  it('thinking blocks sent back are kept whatever their signature, and counted in a receipt', () => {
    const ours = signThinking(mac, 't', 'mine');
    const r = parseAnthropic(
      {
        model: 'm',
        max_tokens: 8,
        messages: [
          { role: 'user', content: 'q1' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'mine', signature: ours },
              { type: 'thinking', thinking: 'from anthropic', signature: 'EqQBCkgIARAB' },
              { type: 'thinking', thinking: 'edited', signature: ours },
              { type: 'text', text: 'a1' },
            ],
          },
          { role: 'user', content: 'q2' },
        ],
      },
      { tenant: 't', maxMessages: 100, mac },
    );
    expect(r.body.messages[1].reasoning_content).toBe('minefrom anthropicedited');
    const receipt = r.receipts?.find((x) => x.action === 'thinking_signatures');
    expect(receipt?.reason).toContain('1 signed by this gateway and verified, 1 signed elsewhere, 1 not matching');
  });
});

describe('through the gateway', () => {
  let w: SimWorker;
  let gw: StartedGateway;
  beforeAll(async () => {
    w = await startSimWorker({ model: 'm' });
    gw = await startGateway(
      parseConfig({
        listen: { host: '127.0.0.1', port: 0 },
        health: { interval_ms: 0 },
        tenancy: { cache_salt_secret: SECRET },
        models: [{ name: 'm', layout: 'passthrough', workers: [{ url: w.url, id: 'w' }] }],
      }),
      { logger: false },
    );
  });
  afterAll(async () => {
    await gw?.close();
    await w?.close();
  });

  it("a later turn carrying the gateway's signed thinking is accepted and its signature verified", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
    // The open (auth: none) tenant is `default`.
    const signature = signThinking(mac, 'default', 'I should list the files.');
    const { data, response } = await client.messages
      .create({
        model: 'm',
        max_tokens: 16,
        messages: [
          { role: 'user', content: 'list the files' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'I should list the files.', signature },
              { type: 'text', text: 'a.txt b.txt' },
            ],
          },
          { role: 'user', content: 'and now?' },
        ],
      })
      .withResponse();
    expect(data.type).toBe('message');
    const rec = (await (
      await fetch(`${gw.url}/v1/gateway/requests/${response.headers.get('x-request-id')}`)
    ).json()) as {
      receipts: { action: string; reason: string }[];
    };
    expect(rec.receipts.find((r) => r.action === 'thinking_signatures')?.reason).toContain(
      '1 signed by this gateway and verified',
    );
  });
});
