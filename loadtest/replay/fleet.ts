// The replay runner's only dependency on the rest of ctxgate: start N reference workers and a
// gateway in front of them for one configuration; return URLs, per-worker counters, each
// request's modeled timing, and close(). Everything in-process, ephemeral ports.
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type GatewayDeps } from '../../gateway/server.ts';
import { createCompactionStage } from '../../middleware/compaction/stage.ts';
import { createLedgerStage } from '../../middleware/ledger/stage.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { createStabiliseStage } from '../../middleware/stabilise/stage.ts';
import { startSimWorker, type SimWorker } from '../sim-worker/index.ts';
import { startTimingTap, type TimingTap } from './timing-tap.ts';
import type { FleetFactory, FleetHandle, FleetSpec } from './types.ts';

export function gatewayConfigFor(spec: FleetSpec, workerUrls: string[]): unknown {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    auth: { mode: 'none' },
    health: { interval_ms: 0 },
    upstream: { attempts: 1 },
    limits: { max_sessions: 100_000 },
    models: [
      {
        name: spec.model,
        tokenizer: spec.tokenizer,
        flavor: spec.flavor,
        layout: spec.layout,
        policy: spec.policy,
        block_size: spec.blockSize,
        ...(spec.budget ? { budget_tokens: spec.budget } : {}),
        workers: workerUrls.map((url, i) => ({ url, id: `w${i}`, kv_tokens: spec.kvTokens })),
      },
    ],
  };
}

export const startFleet: FleetFactory = async (spec) => {
  const workers: SimWorker[] = [];
  const taps: TimingTap[] = [];
  let gateway: { url: string; close(): Promise<void> } | undefined;
  const close = async () => {
    await gateway?.close();
    for (const t of taps) await t.close();
    for (const w of workers) await w.close();
  };
  try {
    for (let i = 0; i < spec.workers; i++) {
      const w = await startSimWorker({
        port: 0,
        model: spec.model,
        tokenizer: spec.tokenizer,
        flavor: spec.flavor,
        kvTokens: spec.kvTokens,
        blockSize: spec.blockSize,
        timeScale: spec.timeScale,
        seed: spec.seed + i,
      });
      workers.push(w);
      taps.push(await startTimingTap(w.url));
    }
    const config = parseConfig(gatewayConfigFor(spec, taps.map((t) => t.url)), 'bench replay');
    const pipelineFor = await pipelineFactory(spec);
    gateway = await startGateway(config, { logger: false, pipelineFor });
  } catch (err) {
    await close();
    throw err;
  }
  const handle: FleetHandle = {
    url: gateway.url,
    model: spec.model,
    perWorker: async () =>
      workers.map((w, i) => {
        const s = w.stats();
        return { worker: `w${i}`, requests: s.requests, prompt_tokens: s.promptTokens, cached_tokens: s.cachedTokens };
      }),
    timing: (id) => {
      for (const t of taps) {
        const v = t.take(id);
        if (v) return v;
      }
      return undefined;
    },
    close,
  };
  return handle;
};

/** The model's context pipeline: ctxgate layout stages plus the context chain (stabilise →
 * ledger → compaction, the latter only with a budget M*), or passthrough (body untouched). Both
 * compute engine-exact tokens and block hashes that prefix-aware routing policies use. */
async function pipelineFactory(spec: FleetSpec): Promise<GatewayDeps['pipelineFor']> {
  return (m) =>
    createPipeline({
      model: m.name,
      tokenizer: spec.tokenizer,
      layout: spec.layout,
      blockSize: spec.blockSize,
      extraStages: [createStabiliseStage(), createLedgerStage(), createCompactionStage({ budgetTokens: spec.budget })],
    });
}
