// Reasoning items' encrypted_content (OpenAI Responses), with the official `openai` SDK over real
// sockets against a reference worker answering as a reasoning model. A client running with
// store: false that asks for `reasoning.encrypted_content` may send each reasoning item back with
// only its summary and that blob (as OpenAI's own items come): the gateway's blob must carry the
// reasoning back to the engine, so the engine sees
// the conversation it generated (and reads it from its cache); blobs sealed elsewhere or for another
// tenant are dropped with a receipt. (The reference worker caches its reasoning without the
// template's think tags, so the cache benefit itself is not asserted here.)
import OpenAI from 'openai';
import type { ResponseFunctionToolCall, ResponseReasoningItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { openReasoning, sealIv, sealReasoning } from '../../gateway/ingress/reasoning-seal.ts';
import { createHmac } from 'node:crypto';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { requestRecord } from '../helpers/request-record.ts';

const mac = (data: string): string => createHmac('sha256', 'test-key').update(data).digest('base64url');

describe('sealReasoning / openReasoning', () => {
  const text = 'I should look at src/ first.\nThen read the tests. ünïcode ✓';

  it('opens for the tenant it was sealed for, deterministically, and for no one else', () => {
    const blob = sealReasoning(mac, 'tenant-a', text);
    expect(blob).toMatch(/^ctxg1_[A-Za-z0-9_-]+$/);
    expect(blob).not.toContain(Buffer.from('src/').toString('base64url').slice(0, 4) + 'AAAA'); // opaque
    expect(sealReasoning(mac, 'tenant-a', text)).toBe(blob);
    expect(openReasoning(mac, 'tenant-a', blob)).toEqual({ kind: 'opened', text });
    expect(openReasoning(mac, 'tenant-b', blob)).toEqual({ kind: 'altered' });
    const otherKey = (d: string): string => createHmac('sha256', 'other-key').update(d).digest('base64url');
    // sealed under another server secret (another replica, a restart): told apart from altered
    expect(openReasoning(otherKey, 'tenant-a', blob)).toEqual({ kind: 'other_key' });
    expect(openReasoning(otherKey, 'tenant-b', blob)).toEqual({ kind: 'other_key' });
  });

  it('two tenants whose ids differ by a NUL-joined suffix never share an IV or a key', () => {
    // the old `tenant \0 text` join made (acme, x\0P) and (acme\0x, P) the same IV under one key
    const a = sealReasoning(mac, 'acme', 'x\u0000the secret plan');
    const b = sealReasoning(mac, 'acme\u0000x', 'the secret plan');
    const iv = (blob: string) => Buffer.from(blob.slice(6), 'base64url').subarray(0, 12);
    expect(iv(a).equals(iv(b))).toBe(false);
    expect(sealIv(mac, 'acme', 'x\u0000P').equals(sealIv(mac, 'acme\u0000x', 'P'))).toBe(false);
    expect(openReasoning(mac, 'acme\u0000x', a)).toEqual({ kind: 'altered' });
    // the same text of two tenants: different IVs and different ciphertexts
    const c = sealReasoning(mac, 'acme', text);
    const d = sealReasoning(mac, 'acme2', text);
    expect(iv(c).equals(iv(d))).toBe(false);
    expect(c.slice(22)).not.toBe(d.slice(22));
  });

  it('a flipped byte, a cut blob or a foreign blob never opens', () => {
    const blob = sealReasoning(mac, 't', text);
    const raw = Buffer.from(blob.slice(6), 'base64url');
    for (const i of [4, 17, raw.length - 1]) {
      const bad = Buffer.from(raw);
      bad[i] ^= 1;
      expect(openReasoning(mac, 't', `ctxg1_${bad.toString('base64url')}`)).toEqual({ kind: 'altered' });
    }
    expect(openReasoning(mac, 't', 'ctxg1_')).toEqual({ kind: 'altered' });
    expect(openReasoning(mac, 't', blob.slice(0, 20))).toEqual({ kind: 'altered' });
    expect(openReasoning(mac, 't', 'gAAAAABoEncryptedByOpenAI')).toEqual({ kind: 'foreign' });
  });
});

describe('through the gateway (openai SDK, Responses API)', () => {
  let w: SimWorker;
  let gw: StartedGateway;
  beforeAll(async () => {
    w = await startSimWorker({ model: 'm', reasoning: true, toolCallRate: 1, timeScale: 0 });
    gw = await startGateway(
      parseConfig({
        listen: { host: '127.0.0.1', port: 0 },
        health: { interval_ms: 0 },
        tenancy: { cache_salt_secret: 'reasoning-test-secret-0123456789' },
        models: [{ name: 'm', layout: 'passthrough', workers: [{ url: w.url, id: 'w' }] }],
      }),
      { logger: false },
    );
  });
  afterAll(async () => {
    await gw?.close();
    await w?.close();
  });

  const SHELL = {
    type: 'function' as const,
    name: 'shell',
    description: 'Run a command',
    parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    strict: false,
  };
  const ASK = 'List the files in src/ and tell me which one holds the router.';

  it('a stateless round trip: the reasoning comes back from the blob alone and reaches the engine', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const base = {
      model: 'm',
      tools: [SHELL],
      store: false,
      include: ['reasoning.encrypted_content' as const],
    };
    const t1 = await client.responses.create({ ...base, input: ASK, max_output_tokens: 64 });
    const rs = t1.output.find((o) => o.type === 'reasoning') as ResponseReasoningItem;
    const fc = t1.output.find((o) => o.type === 'function_call') as ResponseFunctionToolCall;
    expect(rs.content?.[0]?.text).toContain('The user asks');
    expect(rs.encrypted_content).toMatch(/^ctxg1_/);
    expect(fc.name).toBe('shell');

    // the stream's completed response carries the same blob
    const stream = await client.responses.create({ ...base, input: ASK, max_output_tokens: 64, stream: true });
    let streamed: ResponseReasoningItem | undefined;
    for await (const ev of stream)
      if (ev.type === 'response.output_item.done' && ev.item.type === 'reasoning') streamed = ev.item;
    expect(streamed?.encrypted_content).toBe(rs.encrypted_content);

    // without `include` there is no blob, as with OpenAI
    const plain = await client.responses.create({ model: 'm', tools: [SHELL], input: ASK, max_output_tokens: 64 });
    expect((plain.output.find((o) => o.type === 'reasoning') as ResponseReasoningItem).encrypted_content).toBeFalsy();

    // the next turn with the reasoning item as OpenAI's come: summary and blob, no reasoning_text
    const next = (blob: string) =>
      client.responses
        .create({
          ...base,
          max_output_tokens: 8,
          input: [
            { role: 'user', content: ASK },
            { type: 'reasoning', id: rs.id, summary: [], encrypted_content: blob },
            { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
            { type: 'function_call_output', call_id: fc.call_id, output: 'src/router.ts src/index.ts' },
          ],
        })
        .withResponse();
    const restored = await next(rs.encrypted_content!);
    expect(restored.response.headers.get('x-ctxgate-receipt')).toContain('ingress:reasoning_restored');
    expect(restored.response.headers.get('x-ctxgate-receipt') ?? '').not.toContain('reasoning_dropped');
    const foreign = await next('gAAAAABoEncryptedByOpenAI');
    expect(foreign.response.headers.get('x-ctxgate-receipt')).toContain('ingress:reasoning_dropped');
    const altered = await next(`${rs.encrypted_content!.slice(0, -4)}AAAA`);
    expect(altered.response.headers.get('x-ctxgate-receipt')).toContain('ingress:reasoning_dropped');
    const reasonOf = async (gwUrl: string, id: string | null): Promise<string> => {
      const rec = await requestRecord<{ receipts: Array<{ action: string; reason?: string }> }>(gwUrl, id);
      return rec.receipts.find((x) => x.action === 'reasoning_dropped')?.reason ?? '';
    };
    expect(await reasonOf(gw.url, altered.response.headers.get('x-request-id'))).toMatch(/altered/);
    // another replica with its own secret: the receipt names the cause and the setting, not tampering
    const other = await startGateway(
      parseConfig({
        listen: { host: '127.0.0.1', port: 0 },
        health: { interval_ms: 0 },
        tenancy: { cache_salt_secret: 'another-replica-secret-0123456789' },
        models: [{ name: 'm', layout: 'passthrough', workers: [{ url: w.url, id: 'w' }] }],
      }),
      { logger: false },
    );
    try {
      const replica = await new OpenAI({ baseURL: `${other.url}/v1`, apiKey: 'x', maxRetries: 0 }).responses
        .create({
          ...base,
          max_output_tokens: 8,
          input: [
            { role: 'user', content: ASK },
            { type: 'reasoning', id: rs.id, summary: [], encrypted_content: rs.encrypted_content! },
            { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
            { type: 'function_call_output', call_id: fc.call_id, output: 'src/router.ts src/index.ts' },
          ],
        })
        .withResponse();
      const why = await reasonOf(other.url, replica.response.headers.get('x-request-id'));
      expect(why).toContain('sealed by another gateway key');
      expect(why).toContain('tenancy.cache_salt_secret');
      expect(why).not.toMatch(/altered/);
    } finally {
      await other.close();
    }
    // The restored reasoning is in the engine's prompt (the template keeps reasoning inside a
    // tool-call chain): the same prompt as when the client sends the text itself, and longer than
    // the one whose reasoning was dropped.
    const asText = await client.responses.create({
      ...base,
      max_output_tokens: 8,
      input: [
        { role: 'user', content: ASK },
        { type: 'reasoning', id: rs.id, summary: [], content: rs.content },
        { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
        { type: 'function_call_output', call_id: fc.call_id, output: 'src/router.ts src/index.ts' },
      ],
    });
    const r = restored.data.usage!;
    expect(r.input_tokens).toBe(asText.usage!.input_tokens);
    expect(r.input_tokens).toBeGreaterThan(foreign.data.usage!.input_tokens);
    expect(altered.data.usage!.input_tokens).toBe(foreign.data.usage!.input_tokens);
  });
});
