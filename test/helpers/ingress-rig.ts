// A gateway as deployed (ctxgate layout, qwen3 tokenizer, the assembled pipeline) in front of two
// reference workers, with two tenants' keys: what the ingress SDK tests run against.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig, sha256Hex } from '../../gateway/config/load.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

export const KEY_A = 'sk-ingress-tenant-a';
export const KEY_B = 'sk-ingress-tenant-b';
export const MODEL = 'qwen3-32b';

export interface IngressRig {
  url: string;
  workers: SimWorker[];
  anthropic(key?: string, headers?: Record<string, string>): Anthropic;
  openai(key?: string, headers?: Record<string, string>): OpenAI;
  close(): Promise<void>;
}

export async function startIngressRig(extra: Record<string, unknown> = {}): Promise<IngressRig> {
  const workers = await Promise.all(
    [0, 1].map((i) =>
      startSimWorker({ port: 0, model: MODEL, tokenizer: 'qwen3', kvTokens: 400_000, timeScale: 0, seed: 11 + i }),
    ),
  );
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: {
        mode: 'keys',
        keys: [
          { key: `sha256:${sha256Hex(KEY_A)}`, tenant: 'a' },
          { key: `sha256:${sha256Hex(KEY_B)}`, tenant: 'b' },
        ],
      },
      health: { interval_ms: 0 },
      models: [
        {
          name: MODEL,
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          workers: workers.map((w, i) => ({ url: w.url, id: `w${i}` })),
        },
      ],
      ...extra,
    },
    'ingress-rig',
  );
  const gw = await startAssembledGateway(config, { logger: false, reporting: false });
  return {
    url: gw.url,
    workers,
    anthropic: (key = KEY_A, headers = {}) =>
      new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, timeout: 20_000, defaultHeaders: headers }),
    openai: (key = KEY_A, headers = {}) =>
      new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000, defaultHeaders: headers }),
    close: async () => {
      await gw.close();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}
