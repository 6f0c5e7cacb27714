// A fleet of reference workers (qwen3, answering at once, worker i seeded i, ids w0, w1, ...)
// behind an assembled gateway serving them as one model: the e2e tests' common rig.
import { type AssembleOptions, startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { type SimWorker, startSimWorker } from '../../loadtest/sim-worker/index.ts';
import type { SimWorkerOptions } from '../../loadtest/sim-worker/options.ts';

export type AssembledGateway = Awaited<ReturnType<typeof startAssembledGateway>>;

export interface SimGatewayOptions {
  workers: number;
  /** the served model's name (default `m`) */
  model?: string;
  /** each worker's options besides port, model, tokenizer, timeScale and seed */
  sim?: Partial<SimWorkerOptions>;
  /** the model's config besides name, tokenizer and workers */
  modelConfig?: Record<string, unknown>;
  /** the config besides listen, health (no active checks) and models */
  config?: Record<string, unknown>;
  /** what parseConfig names as the source in its errors */
  source?: string;
  /** besides logger: false and reporting: false */
  assemble?: AssembleOptions;
}

export interface SimGateway {
  workers: SimWorker[];
  gw: AssembledGateway;
  /** The gateway, then the workers. */
  close(): Promise<void>;
}

export async function startSimGateway(o: SimGatewayOptions): Promise<SimGateway> {
  const model = o.model ?? 'm';
  const workers = await Promise.all(
    Array.from({ length: o.workers }, (_, i) =>
      startSimWorker({ ...o.sim, port: 0, model, tokenizer: 'qwen3', timeScale: 0, seed: i }),
    ),
  );
  const closeWorkers = () => Promise.all(workers.map((w) => w.close()));
  try {
    const config = parseConfig(
      {
        listen: { host: '127.0.0.1', port: 0 },
        health: { interval_ms: 0 },
        ...o.config,
        models: [
          {
            name: model,
            tokenizer: 'qwen3',
            ...o.modelConfig,
            workers: workers.map((w, i) => ({ url: w.url, id: `w${i}` })),
          },
        ],
      },
      o.source,
    );
    const gw = await startAssembledGateway(config, { logger: false, reporting: false, ...o.assemble });
    return {
      workers,
      gw,
      close: async () => {
        await gw.close();
        await closeWorkers();
      },
    };
  } catch (err) {
    await closeWorkers();
    throw err;
  }
}
