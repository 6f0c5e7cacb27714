// The replay runner's only dependency on the rest of ctxgate: start N reference workers and a
// gateway in front of them for one configuration (assembled as `ctxgate serve` does: layout
// stages, context chain, compaction when a budget M* is set); return URLs, per-worker counters
// and close(). Modeled timing reaches the client in the gateway's relayed x-sim-timing header
// (upstream.forward_response_headers). Everything in-process, ephemeral ports.
import { parseConfig } from '../../gateway/config/load.ts';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { startSimWorker, type SimWorker } from '../sim-worker/index.ts';
import type { Exchange, FleetFactory, FleetHandle, FleetSpec } from './types.ts';

export function gatewayConfigFor(spec: FleetSpec, workerUrls: string[]): unknown {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    auth: { mode: 'none' },
    health: { interval_ms: 0 },
    // explicit: replay's modeled TTFT comes from this relayed header
    upstream: { attempts: 1, forward_response_headers: ['x-sim-timing'] },
    limits: { max_sessions: 100_000 },
    models: [
      {
        name: spec.model,
        tokenizer: spec.tokenizer,
        ...(spec.chatTemplate ? { chat_template: spec.chatTemplate } : {}),
        flavor: spec.flavor,
        layout: spec.layout,
        policy: spec.policy,
        ...(spec.policyOptions ? { policy_options: spec.policyOptions } : {}),
        block_size: spec.blockSize,
        ...(spec.budget ? { budget_tokens: spec.budget } : {}),
        workers: workerUrls.map((url, i) => ({ url, id: `w${i}`, kv_tokens: spec.kvTokens })),
      },
    ],
  };
}

interface WorkersRoute {
  models?: { name: string; policy_stats?: Record<string, unknown> }[];
}

/** The gateway's policy counters for one model; auth mode none makes every caller admin. */
async function readPolicyStats(gatewayUrl: string, model: string): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${gatewayUrl}/v1/gateway/workers`);
  if (!res.ok) throw new Error(`GET /v1/gateway/workers: HTTP ${res.status}`);
  const body = (await res.json()) as WorkersRoute;
  return body.models?.find((m) => m.name === model)?.policy_stats;
}

export const startFleet: FleetFactory = async (spec) => {
  const workers: SimWorker[] = [];
  let gateway: { url: string; close(): Promise<void> } | undefined;
  // Each pipeline run, by request id, until the runner takes it for the lossless check.
  const exchanges = new Map<string, Exchange>();
  const close = async () => {
    await gateway?.close();
    for (const w of workers) await w.close();
  };
  try {
    for (let i = 0; i < spec.workers; i++) {
      const w = await startSimWorker({
        port: 0,
        model: spec.model,
        tokenizer: spec.tokenizer,
        chatTemplate: spec.chatTemplate,
        flavor: spec.flavor,
        kvTokens: spec.kvTokens,
        blockSize: spec.blockSize,
        timeScale: spec.timeScale,
        seed: spec.seed + i,
      });
      workers.push(w);
    }
    const config = parseConfig(
      gatewayConfigFor(
        spec,
        workers.map((w) => w.url),
      ),
      'bench replay',
    );
    // The product as `ctxgate serve` assembles it (pipeline, context chain with M*, stores),
    // minus usage accounting: replay reports its own figures.
    gateway = await startAssembledGateway(config, {
      logger: false,
      reporting: false,
      tap: (client, result, ctx) =>
        void exchanges.set(ctx.requestId, { client, upstream: result.body, receipts: result.receipts }),
    });
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
    policyStats: () => readPolicyStats(gateway!.url, spec.model),
    takeExchange: (id) => {
      const ex = exchanges.get(id);
      exchanges.delete(id);
      return ex;
    },
    recordedAnswers: true,
    close,
  };
  return handle;
};
