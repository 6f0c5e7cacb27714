// Options of the reference worker, their defaults, and the command-line parser shared by
// `ctxgate sim-worker` and `ctxgate bench calibrate`.
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';
import { DEFAULT_FAULTS, type FaultConfig } from './faults.ts';
import { DEFAULT_KV_EVENTS_BUFFER_STEPS, type KvEventsOptions } from './kv-event-publisher.ts';
import { DEFAULT_MAX_TOOL_TURNS, DEFAULT_TOOL_CALL_RATE } from './generate.ts';
import { DEFAULT_MFU, DEFAULT_PRESET, PRESETS, type TimingModel } from './timing.ts';

export type Flavor = 'vllm' | 'sglang';

export interface SimWorkerOptions {
  port: number;
  host: string;
  /** Served model name (what /v1/models lists and requests must name). */
  model: string;
  tokenizer: string;
  chatTemplate?: string;
  flavor: Flavor;
  kvTokens: number;
  blockSize: number;
  timing: TimingModel;
  maxRunning: number;
  /** Sleep modeled time × timeScale; 0 = never sleep (times still reported). */
  timeScale: number;
  seed: number;
  /** Maximum prompt + output tokens (vLLM max_model_len). */
  maxModelLen: number;
  /** Share of tool-enabled `auto` calls that answer with a tool call. */
  toolCallRate: number;
  /** Tool calls in a row after which an `auto` answer is plain text (ends an agent loop). */
  maxToolTurns: number;
  /** A reasoning model served with a reasoning parser (vLLM/SGLang --reasoning-parser): each
   *  generated answer carries reasoning_content before its content or tool call, unless the
   *  request turns thinking off (chat_template_kwargs.enable_thinking: false, as Qwen3's template). */
  reasoning?: boolean;
  /** Directories whose files tool-call arguments may name (listed from disk); none = paths from the prompt only. */
  workspaceRoots: string[];
  faults: FaultConfig;
  /** Publish KV cache events over ZeroMQ, as the flavour's engine does (--kv-events-config). */
  kvEvents?: KvEventsOptions;
}

export const DEFAULT_OPTIONS: SimWorkerOptions = {
  port: 0,
  host: '127.0.0.1',
  model: 'sim-model',
  tokenizer: 'qwen3',
  flavor: 'vllm',
  kvTokens: 1_000_000,
  blockSize: DEFAULT_BLOCK_SIZE,
  timing: PRESETS[DEFAULT_PRESET],
  maxRunning: 64,
  timeScale: 0,
  seed: 0,
  maxModelLen: 131_072,
  toolCallRate: DEFAULT_TOOL_CALL_RATE,
  maxToolTurns: DEFAULT_MAX_TOOL_TURNS,
  workspaceRoots: [],
  faults: DEFAULT_FAULTS,
};

export function resolveOptions(opts: Partial<SimWorkerOptions>): SimWorkerOptions {
  return {
    ...DEFAULT_OPTIONS,
    ...opts,
    faults: { ...DEFAULT_FAULTS, ...opts.faults },
    timing: { ...(opts.timing ?? DEFAULT_OPTIONS.timing) },
  };
}

export const OPTIONS_HELP = `  --port N            listen port (0 = ephemeral; default 0)
  --host H            listen address (default 127.0.0.1)
  --model NAME        served model name (default sim-model)
  --tokenizer SPEC    qwen3|llama3_1|deepseek_v3|o200k_base|cl100k_base|DIR (default qwen3)
  --chat-template F   jinja chat template file (default: the tokenizer's own)
  --flavor vllm|sglang  cache + API flavour (default vllm)
  --kv-tokens N       KV cache capacity in tokens (default 1000000)
  --block-size N      vLLM block size (default 16)
  --preset NAME       timing preset: ${Object.keys(PRESETS).join(', ')}
  --params --layers --hidden --kv-heads --head-dim   model shape (overrides the preset)
  --peak-tflops F --mfu F --bandwidth-gbs F          hardware (overrides the preset)
  --max-running N     batch slots (default 64)
  --max-model-len N   most prompt + output tokens; longer asks get vLLM's 400 (default ${DEFAULT_OPTIONS.maxModelLen})
  --time-scale F      sleep modeled time × F (default 0 = no sleeping)
  --seed N            output seed (default 0)
  --tool-call-rate F  share of tool-enabled auto calls answered with a tool call (default ${DEFAULT_TOOL_CALL_RATE})
  --max-tool-turns N  tool calls in a row before a plain text answer (default ${DEFAULT_MAX_TOOL_TURNS})
  --reasoning         answer as a reasoning model (reasoning_content first; enable_thinking: false turns it off)
  --workspace-root D  tool arguments may name files listed under D (repeatable; default: only paths in the prompt)
  --fail-rate F --fail-status N --hang-ms N --die-after-chunks N   faults
  --kv-events-config JSON  publish KV cache events as the flavour's engine does, e.g. vLLM
                      '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",
                        "replay_endpoint":"tcp://*:5558","topic":"kv-events"}'; SGLang (page_size 1:
                      one BlockStored per token) '{"publisher":"zmq","endpoint":"tcp://*:5557"}'`;

/** --kv-events-config JSON → publisher options (undefined when events are off). vLLM's
 *  KVEventsConfig needs enable_kv_cache_events: true; SGLang's has no such field, its publisher
 *  "zmq" (default "null") turns events on. */
export function parseKvEventsConfig(json: string, flavor: Flavor = 'vllm'): KvEventsOptions | undefined {
  let c: Record<string, unknown>;
  try {
    c = JSON.parse(json) as Record<string, unknown>;
  } catch {
    throw new Error('--kv-events-config must be JSON');
  }
  if (!c || typeof c !== 'object' || c.publisher === 'null') return undefined;
  if (flavor === 'vllm' ? c.enable_kv_cache_events !== true : c.publisher !== 'zmq') return undefined;
  if (c.publisher !== undefined && c.publisher !== 'zmq')
    throw new Error("--kv-events-config: publisher must be 'zmq'");
  const str = (k: string, d?: string): string | undefined => {
    const v = c[k] ?? d;
    if (v !== undefined && v !== null && typeof v !== 'string')
      throw new Error(`--kv-events-config: ${k} must be a string`);
    return (v ?? undefined) as string | undefined;
  };
  const steps = c.buffer_steps ?? DEFAULT_KV_EVENTS_BUFFER_STEPS;
  if (typeof steps !== 'number' || !Number.isInteger(steps) || steps < 1)
    throw new Error('--kv-events-config: buffer_steps must be a positive integer');
  return {
    endpoint: str('endpoint', 'tcp://*:5557')!,
    replayEndpoint: str('replay_endpoint'),
    topic: str('topic', '')!,
    bufferSteps: steps,
  };
}

/** Parses `--name value` pairs into options; unknown flags are returned in `rest`. */
export function parseWorkerArgs(argv: string[]): { opts: Partial<SimWorkerOptions>; rest: string[] } {
  const opts: Partial<SimWorkerOptions> = {};
  const timing: TimingModel = { ...PRESETS[DEFAULT_PRESET] };
  let timingTouched = false;
  const faults: Partial<FaultConfig> = {};
  const rest: string[] = [];
  let kvEventsJson: string | undefined;
  const num = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n)) throw new Error(`${flag} needs a number`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[i + 1];
    const take = (): string => {
      if (v === undefined) throw new Error(`${flag} needs a value`);
      i++;
      return v;
    };
    switch (flag) {
      case '--port':
        opts.port = num(flag, take());
        break;
      case '--host':
        opts.host = take();
        break;
      case '--model':
        opts.model = take();
        break;
      case '--tokenizer':
        opts.tokenizer = take();
        break;
      case '--chat-template':
        opts.chatTemplate = take();
        break;
      case '--flavor': {
        const f = take();
        if (f !== 'vllm' && f !== 'sglang') throw new Error('--flavor must be vllm or sglang');
        opts.flavor = f;
        break;
      }
      case '--kv-tokens':
        opts.kvTokens = num(flag, take());
        break;
      case '--block-size':
        opts.blockSize = num(flag, take());
        break;
      case '--preset': {
        const p = PRESETS[take()];
        if (!p) throw new Error(`unknown preset; known: ${Object.keys(PRESETS).join(', ')}`);
        Object.assign(timing, p);
        timingTouched = true;
        break;
      }
      case '--params':
        timing.params = num(flag, take());
        timingTouched = true;
        break;
      case '--layers':
        timing.layers = num(flag, take());
        timingTouched = true;
        break;
      case '--hidden':
        timing.hidden = num(flag, take());
        timingTouched = true;
        break;
      case '--kv-heads':
        timing.kvHeads = num(flag, take());
        timingTouched = true;
        break;
      case '--head-dim':
        timing.headDim = num(flag, take());
        timingTouched = true;
        break;
      case '--peak-tflops':
        timing.peakFlops = num(flag, take()) * 1e12;
        timingTouched = true;
        break;
      case '--mfu':
        timing.mfu = num(flag, take()) || DEFAULT_MFU;
        timingTouched = true;
        break;
      case '--bandwidth-gbs':
        timing.bandwidth = num(flag, take()) * 1e9;
        timingTouched = true;
        break;
      case '--max-running':
        opts.maxRunning = num(flag, take());
        break;
      case '--max-model-len':
        opts.maxModelLen = num(flag, take());
        break;
      case '--time-scale':
        opts.timeScale = num(flag, take());
        break;
      case '--seed':
        opts.seed = num(flag, take());
        break;
      case '--tool-call-rate':
        opts.toolCallRate = num(flag, take());
        break;
      case '--max-tool-turns':
        opts.maxToolTurns = num(flag, take());
        break;
      case '--reasoning':
        opts.reasoning = true;
        break;
      case '--workspace-root':
        opts.workspaceRoots = [...(opts.workspaceRoots ?? []), take()];
        break;
      case '--fail-rate':
        faults.failRate = num(flag, take());
        break;
      case '--fail-status':
        faults.failStatus = num(flag, take());
        break;
      case '--hang-ms':
        faults.hangMs = num(flag, take());
        break;
      case '--die-after-chunks':
        faults.dieAfterChunks = num(flag, take());
        break;
      case '--kv-events-config':
        kvEventsJson = take();
        break;
      default:
        rest.push(flag);
    }
  }
  // after every flag: what turns events on depends on --flavor
  if (kvEventsJson !== undefined) opts.kvEvents = parseKvEventsConfig(kvEventsJson, opts.flavor ?? 'vllm');
  if (timingTouched) opts.timing = timing;
  if (Object.keys(faults).length) opts.faults = { ...DEFAULT_FAULTS, ...faults };
  return { opts, rest };
}
