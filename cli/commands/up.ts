// ctxgate up: the first thing a new user runs. Starts N reference workers (the vLLM/SGLang stand-in,
// loadtest/sim-worker) on ephemeral ports and the gateway in front of them, assembled exactly as
// `ctxgate serve` assembles it (layout ctxgate, policy ctxgate, active health checks, usage ledger),
// waits until /ready says every worker answered, prints where to point an agent, and stops both on
// SIGINT/SIGTERM. No config file, no key: auth mode none on 127.0.0.1.
import { parseArgs } from 'node:util';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { ConfigError, parseConfig } from '../../gateway/config/load.ts';
import { DEFAULT_HOST, DEFAULT_PORT, MAX_PORT } from '../../gateway/config/schema.ts';
import { missingNodeFlags, nodeFlagsWarning } from '../../gateway/node-flags.ts';
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { BUNDLED_TOKENIZERS, TIKTOKEN_ENCODINGS } from '../../middleware/tokens/registry.ts';

export const DEFAULT_UP_WORKERS = 2;
export const DEFAULT_UP_TOKENIZER = 'qwen3';
/** How long `up` waits for the first health round to pass before giving up. */
export const UP_READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 100;
const TOKENIZERS: readonly string[] = [...BUNDLED_TOKENIZERS, ...TIKTOKEN_ENCODINGS];
/** Served model names by tokenizer, so the README's snippet (model qwen3-32b) works unchanged. */
const MODEL_FOR_TOKENIZER: Record<string, string> = {
  qwen3: 'qwen3-32b',
  llama3_1: 'llama-3.1-8b',
  deepseek_v3: 'deepseek-v3',
};

export const help = `ctxgate up [--workers N] [--tokenizer NAME] [--port P] [--host H] [--model NAME] [--flavor vllm|sglang] [--budget N]

Starts N reference workers (vLLM/SGLang stand-ins with a real prefix cache, on ephemeral ports) and the
gateway in front of them, waits until every worker passed a health check, and prints the base URL to
point an agent at. Ctrl-C stops everything.
  --workers N       reference workers (default ${DEFAULT_UP_WORKERS})
  --tokenizer NAME  ${TOKENIZERS.join('|')} (default ${DEFAULT_UP_TOKENIZER})
  --port P          gateway port (default ${DEFAULT_PORT}; 0 = any free port)
  --host H          gateway address (default ${DEFAULT_HOST}; there is no auth, keep it local)
  --model NAME      model name agents send (default: ${Object.entries(MODEL_FOR_TOKENIZER)
    .map(([t, m]) => `${m} for ${t}`)
    .join(', ')}, else local-model)
  --flavor F        engine the workers imitate: vllm or sglang (default vllm)
  --budget N        M*, the working-set budget per call that turns compaction on (default: off)`;

export interface UpOptions {
  workers: number;
  tokenizer: string;
  port: number;
  host: string;
  model: string;
  flavor: 'vllm' | 'sglang';
  budget?: number;
  /** pino options or false (tests). */
  logger?: false | { level: string };
  /** Usage ledger file (default: the config default, ctxgate-usage.sqlite in the working directory). */
  ledgerPath?: string;
}

export interface LocalFleet {
  url: string;
  model: string;
  workers: SimWorker[];
  close(): Promise<void>;
}

/** The gateway config `up` serves: what a user would write for the same fleet by hand. */
export function upConfig(o: UpOptions, workerUrls: string[]): unknown {
  return {
    listen: { host: o.host, port: o.port },
    auth: { mode: 'none' },
    ...(o.ledgerPath ? { ledger: { path: o.ledgerPath } } : {}),
    models: [
      {
        name: o.model,
        tokenizer: o.tokenizer,
        flavor: o.flavor,
        layout: 'ctxgate',
        policy: 'ctxgate',
        block_size: DEFAULT_BLOCK_SIZE,
        ...(o.budget ? { budget_tokens: o.budget } : {}),
        workers: workerUrls.map((url, i) => ({ url, id: `w${i}` })),
      },
    ],
  };
}

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    const res = await fetch(`${url}/ready`).catch(() => undefined);
    if (res?.status === 200) return;
    last = res ? await res.text() : 'no answer';
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
  throw new Error(`gateway not ready after ${timeoutMs} ms: ${last}`);
}

export async function startLocalFleet(o: UpOptions): Promise<LocalFleet> {
  const workers: SimWorker[] = [];
  let gateway: { url: string; close(): Promise<void> } | undefined;
  const close = async (): Promise<void> => {
    await gateway?.close();
    await Promise.all(workers.map((w) => w.close()));
  };
  try {
    for (let i = 0; i < o.workers; i++) {
      workers.push(
        await startSimWorker({
          port: 0,
          model: o.model,
          tokenizer: o.tokenizer,
          flavor: o.flavor,
          blockSize: DEFAULT_BLOCK_SIZE,
          seed: i,
        }),
      );
    }
    const config = parseConfig(
      upConfig(
        o,
        workers.map((w) => w.url),
      ),
      'ctxgate up',
    );
    gateway = await startAssembledGateway(config, { logger: o.logger ?? { level: 'info' } });
    await waitReady(gateway.url, UP_READY_TIMEOUT_MS);
  } catch (err) {
    await close();
    throw err;
  }
  return { url: gateway.url, model: o.model, workers, close };
}

function intOption(
  v: string | undefined,
  name: string,
  dflt: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(
      `--${name} must be an integer >= ${min}${max < Number.MAX_SAFE_INTEGER ? ` and <= ${max}` : ''}, got '${v}'`,
    );
  return n;
}

export function parseUpArgs(argv: string[]): UpOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      workers: { type: 'string' },
      tokenizer: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      model: { type: 'string' },
      flavor: { type: 'string' },
      budget: { type: 'string' },
    },
  });
  const tokenizer = values.tokenizer ?? DEFAULT_UP_TOKENIZER;
  if (!TOKENIZERS.includes(tokenizer))
    throw new Error(`--tokenizer must be one of ${TOKENIZERS.join(', ')}, got '${tokenizer}'`);
  const flavor = values.flavor ?? 'vllm';
  if (flavor !== 'vllm' && flavor !== 'sglang') throw new Error(`--flavor must be vllm or sglang, got '${flavor}'`);
  const budget = values.budget === undefined ? undefined : intOption(values.budget, 'budget', 0, 1);
  return {
    workers: intOption(values.workers, 'workers', DEFAULT_UP_WORKERS, 1),
    tokenizer,
    port: intOption(values.port, 'port', DEFAULT_PORT, 0, MAX_PORT),
    host: values.host ?? DEFAULT_HOST,
    model: values.model ?? MODEL_FOR_TOKENIZER[tokenizer] ?? 'local-model',
    flavor,
    budget,
  };
}

/** The banner's note when node lacks the gateway's flags (latencies measured here would not be the deployed ones). */
function upNodeFlagsNote(): string[] {
  const missing = missingNodeFlags();
  return missing.length > 0 ? [`  note      ${nodeFlagsWarning(missing)}`] : [];
}

export async function run(argv: string[]): Promise<number> {
  let o: UpOptions;
  try {
    o = parseUpArgs(argv);
  } catch (err) {
    process.stderr.write(`ctxgate up: ${(err as Error).message}\n\n${help}\n`);
    return 2;
  }
  let fleet: LocalFleet;
  try {
    fleet = await startLocalFleet(o);
  } catch (err) {
    process.stderr.write(`ctxgate up: ${(err as Error).message}\n`);
    return err instanceof ConfigError ? 2 : 1;
  }
  process.stdout.write(
    [
      `ctxgate up: ${o.workers} reference ${o.flavor} worker(s) (tokenizer ${o.tokenizer}) behind the gateway, all healthy`,
      `  base URL  ${fleet.url}/v1      model  ${fleet.model}      key  any (auth off; local use only)`,
      `  export OPENAI_BASE_URL=${fleet.url}/v1 OPENAI_API_KEY=none`,
      `  workers   ${fleet.url}/v1/gateway/workers      metrics  ${fleet.url}/metrics      Ctrl-C stops`,
      ...upNodeFlagsNote(),
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await fleet.close();
  return 0;
}
