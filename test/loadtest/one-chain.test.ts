// What is benchmarked is what is served: `ctxgate serve` (assemble), `bench replay` (the config
// its fleet builds, assembled the same way, with its tap) and `bench strategies` (the ctxgate
// strategy) run the one stage list of middleware/chain.ts, in the same order, with the same
// settings; and over the same session the strategy stages exactly the messages serve sends.
import { describe, expect, it } from 'vitest';
import { assemble } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { strategyChainSpec } from '../../loadtest/bench-strategies.ts';
import { applyProfile } from '../../loadtest/profiles/index.ts';
import { gatewayConfigFor } from '../../loadtest/replay/fleet.ts';
import { ctxgateStrategy, STRATEGY_MODEL } from '../../loadtest/strategies/ctxgate-strategy.ts';
import { generateSessions } from '../../loadtest/synth/index.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';

const BUDGET = 4096;
const TOKENIZER = 'qwen3';
const BLOCK = 16;

function servedPipeline(raw: unknown, tap = false) {
  const config = parseConfig(raw, 'test');
  const a = assemble(config, { reporting: false, ...(tap ? { tap: () => undefined } : {}) });
  return { pipeline: a.deps.pipelineFor!(config.models[0]), close: () => a.close() };
}

describe('one context chain for serve, bench replay and bench strategies', () => {
  it('the same stage list, order and settings at all three entry points', async () => {
    const serve = servedPipeline({
      auth: { mode: 'none' },
      models: [{ name: 'm', tokenizer: TOKENIZER, budget_tokens: BUDGET, workers: [{ url: 'http://127.0.0.1:9' }] }],
    });
    const replay = servedPipeline(
      gatewayConfigFor(
        {
          workers: 1,
          flavor: 'vllm',
          kvTokens: 100_000,
          blockSize: BLOCK,
          tokenizer: TOKENIZER,
          timeScale: 0,
          seed: 1,
          layout: 'ctxgate',
          policy: 'ctxgate',
          budget: BUDGET,
          model: 'm',
        },
        ['http://127.0.0.1:9'],
      ),
      true,
    );
    const strategy = ctxgateStrategy(strategyChainSpec(BUDGET, TOKENIZER), await loadTokenizer(TOKENIZER), BLOCK);
    expect(serve.pipeline.chain?.stages.map((s) => s.name)).toEqual([
      'canonical_tools',
      'volatile',
      'stabilise',
      'ledger',
      'compaction',
    ]);
    expect(serve.pipeline.chain?.stages.find((s) => s.name === 'compaction')?.settings).toMatchObject({
      budgetTokens: BUDGET,
    });
    expect(replay.pipeline.chain).toEqual(serve.pipeline.chain);
    expect(strategy.chain).toEqual(serve.pipeline.chain);
    // Without a budget, no compaction anywhere (and the descriptions notice a difference).
    const noBudget = servedPipeline({
      auth: { mode: 'none' },
      models: [{ name: 'm', tokenizer: TOKENIZER, workers: [{ url: 'http://127.0.0.1:9' }] }],
    });
    expect(noBudget.pipeline.chain?.stages.map((s) => s.name)).not.toContain('compaction');
    expect(noBudget.pipeline.chain).not.toEqual(serve.pipeline.chain);
    await Promise.all([serve.close(), replay.close(), noBudget.close()]);
  });

  it('over one session the strategy stages exactly what serve sends (volatile clock, elisions, compaction)', async () => {
    const [session] = applyProfile(
      generateSessions({ count: 1, seed: 7, volatileEvery: 0, elisionEvery: 3 }),
      'volatile-clock',
      {
        seed: 7,
      },
    );
    const serve = servedPipeline({
      auth: { mode: 'none' },
      models: [
        { name: STRATEGY_MODEL, tokenizer: TOKENIZER, budget_tokens: BUDGET, workers: [{ url: 'http://127.0.0.1:9' }] },
      ],
    });
    const run = ctxgateStrategy(strategyChainSpec(BUDGET, TOKENIZER), await loadTokenizer(TOKENIZER), BLOCK).start({
      budget: BUDGET,
      count: () => 0,
    });
    const seen = new Set<string>();
    for (const [i, call] of session.calls.entries()) {
      const served = await serve.pipeline.process(structuredClone(call.body), {
        tenant: 't',
        requestId: `r${i}`,
        headers: { 'x-session-id': 's' },
        model: STRATEGY_MODEL,
      });
      const staged = await run.stage(structuredClone(call.body.messages), 0, structuredClone(call.body.tools));
      expect(staged.messages, `call ${i}`).toEqual(served.body.messages);
      expect(staged.tools ?? call.body.tools, `call ${i}`).toEqual(served.body.tools);
      for (const r of served.receipts) seen.add(`${r.stage}:${r.action}`);
    }
    // The session exercised the stages (not a vacuous equality of unchanged bodies).
    expect([...seen]).toEqual(
      expect.arrayContaining(['volatile:relocate', 'leaf_note:append', 'compaction:compacted']),
    );
    await serve.close();
  });
});
