// Reference worker: a vLLM/SGLang stand-in with a real prefix cache, the model's real chat
// template and tokenizer, and modeled timing. Many can run in one process (no globals).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BlockCache } from './block-cache.ts';
import { SimEngine } from './engine.ts';
import { FaultInjector, type FaultConfig } from './faults.ts';
import { KvEventPublisher } from './kv-event-publisher.ts';
import { createMetrics } from './metrics.ts';
import { resolveOptions, type SimWorkerOptions } from './options.ts';
import type { RadixCache } from './radix-cache.ts';
import { createHandler } from './server.ts';
import { loadWorkerTokenizer, type WorkerTokenizer } from './tokenize.ts';

export type { SimWorkerOptions } from './options.ts';
export { PRESETS } from './timing.ts';

export interface SimWorkerStats {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** cachedTokens ÷ promptTokens (0 when idle). */
  hitRate: number;
  /** KV capacity in use, 0..1. */
  kvUsage: number;
  evictions: number;
  /** Full blocks in the prefix cache (SGLang flavour: `blockSize`-token blocks the radix tree holds whole). */
  cachedBlocks: number;
  running: number;
  waiting: number;
}

export interface SimWorker {
  url: string;
  port: number;
  options: SimWorkerOptions;
  tokenizer: WorkerTokenizer;
  close(): Promise<void>;
  stats(): SimWorkerStats;
  flushCache(): void;
  setFault(f: Partial<FaultConfig>): void;
  /** The KV event publisher, when `kvEvents` is set (its `endpoint`s are the bound addresses). */
  kvEvents?: KvEventPublisher;
}

const tokenizerCache = new Map<string, Promise<WorkerTokenizer>>();

/** Tokenizers are immutable and slow to load; workers in one process share them. */
function sharedTokenizer(spec: string, template?: string): Promise<WorkerTokenizer> {
  const key = `${spec}\0${template ?? ''}`;
  let t = tokenizerCache.get(key);
  if (!t) {
    t = loadWorkerTokenizer(spec, template);
    tokenizerCache.set(key, t);
    t.catch(() => tokenizerCache.delete(key));
  }
  return t;
}

export async function startSimWorker(partial: Partial<SimWorkerOptions> = {}): Promise<SimWorker> {
  const options = resolveOptions(partial);
  const tokenizer = await sharedTokenizer(options.tokenizer, options.chatTemplate);
  const kvEvents = options.kvEvents
    ? await new KvEventPublisher({ ...options.kvEvents, layout: options.flavor }).start()
    : undefined;
  const engine = new SimEngine(options, tokenizer, kvEvents);
  const faults = new FaultInjector(options.faults, options.seed);
  const metrics = createMetrics(options.flavor, options.model);
  const load = { running: 0, waiting: 0 };
  const server: Server = createServer({ keepAliveTimeout: 30_000 }, createHandler({ engine, faults, metrics, load }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  }).catch(async (err: unknown) => {
    await kvEvents?.stop();
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':')
    ? `[${options.host}]`
    : options.host === '0.0.0.0'
      ? '127.0.0.1'
      : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    options,
    tokenizer,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await kvEvents?.stop();
    },
    stats: () => {
      const t = engine.totals;
      return {
        ...t,
        hitRate: t.promptTokens ? t.cachedTokens / t.promptTokens : 0,
        kvUsage: engine.cache.usage(),
        evictions: engine.cache.stats().evictions,
        cachedBlocks:
          engine.cache instanceof BlockCache
            ? engine.cache.size()
            : (engine.cache as RadixCache).fullBlocks(options.blockSize),
        running: load.running,
        waiting: load.waiting,
      };
    },
    flushCache: () => engine.cache.flush(),
    setFault: (f) => faults.set(f),
    kvEvents,
  };
}
