// The gateway's side of the pipeline contract: process() before routing, its body goes upstream,
// its diagnostics come back as headers, observe() gets the assistant message and usage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage, ContextPipeline, PipelineOutcome } from '../../middleware/types.ts';
import type { RouteInfo } from '../../kvplanner/types.ts';
import { startRig, until, type TestRig } from '../helpers/gateway.ts';

describe('pipeline hooks', () => {
  const outcomes: PipelineOutcome[] = [];
  let rig: TestRig;
  beforeAll(async () => {
    const pipeline: ContextPipeline = {
      async process(body, ctx) {
        const messages: ChatMessage[] = [{ role: 'system', content: 'ROOT' }, ...body.messages];
        return {
          body: { ...body, messages },
          sessionId: `s-${ctx.tenant}`,
          receipts: [
            { stage: 'layout', action: 'root_inserted', reason: 'test' },
            { stage: 'filter', action: 'ansi_stripped', reason: 'test' },
          ],
          prefix: {
            predicted_cached_tokens: 12,
            prompt_tokens: 40,
            break_cause: 'system_changed',
            break_token_index: 3,
          },
        };
      },
      observe(_result, outcome) {
        outcomes.push(outcome);
      },
    };
    rig = await startRig({ deps: { pipelineFor: () => pipeline } });
  });
  afterAll(async () => rig.close());

  it('sends the pipeline body upstream and reports session, prefix and receipts', async () => {
    const { response } = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'u1' }] })
      .withResponse();
    expect(response.headers.get('x-ctxgate-session')).toBe('s-default');
    expect(response.headers.get('x-ctxgate-prefix')).toBe('cached=12; break=system_changed@3');
    expect(response.headers.get('x-ctxgate-receipt')).toBe('layout:root_inserted,filter:ansi_stripped');
    const sent = rig.ups.flatMap((u) => u.requests).at(-1) as { messages: ChatMessage[] };
    expect(sent.messages.map((m) => m.content)).toEqual(['ROOT', 'u1']);
    await until(() => outcomes.length === 1);
    expect(outcomes[0]).toMatchObject({
      status: 200,
      assistant: { role: 'assistant' },
      promptTokens: expect.any(Number),
    });
    const metrics = await fetch(`${rig.gw.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/ctxgate_cache_breaks_total\{model="m1",cause="system_changed"\} 1/);
  });

  it('assembles the assistant message (tool calls included) from a stream for observe()', async () => {
    const stream = await rig.client().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'u2' }],
      tools: [{ type: 'function', function: { name: 'edit', parameters: { type: 'object' } } }],
      stream: true,
    });
    for await (const _ of stream) void _;
    await until(() => outcomes.length === 2);
    expect(outcomes[1].assistant).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'edit', arguments: '{"path":"a.txt"}' } }],
    });
    expect(outcomes[1].cachedTokens).toBe(0);
    const ev = rig.usage.at(-1)!;
    expect(ev).toMatchObject({
      sessionId: 's-default',
      breakCause: 'system_changed',
      predictedCachedTokens: 12,
      stream: true,
    });
  });

  it('hands the policy the route info (text lazily) and routes with it', async () => {
    const seen: RouteInfo[] = [];
    const route = rig.gw.ctx.fleet.get('m1')!;
    const orig = route.policy.select.bind(route.policy);
    route.policy.select = (w, info) => {
      seen.push(info);
      return orig(w, info);
    };
    await rig.client().chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'find me' }] });
    route.policy.select = orig;
    expect(seen[0]).toMatchObject({ model: 'm1', tenant: 'default', sessionId: 's-default' });
    expect(seen[0].text).toBe('ROOTfind me');
    expect(seen[0].promptTokens).toBeGreaterThan(0);
  });
});
