// `ctxgate plan`: KV capacity and prefill-time planning for a model on a GPU (kvplanner/capacity.ts).
import { parseArgs } from 'node:util';
import { plan, type Plan } from '../../kvplanner/capacity.ts';
import {
  DTYPE_BYTES,
  GPU_PRESETS,
  gpuPreset,
  MODEL_PRESETS,
  modelPreset,
  type Attention,
  type GpuSpec,
  type ModelSpec,
} from '../../kvplanner/presets.ts';

export const help = `ctxgate plan — KV cache capacity and prefill planning

usage: ctxgate plan [--model NAME | model shape] [--gpu NAME | gpu figures] [options]

model presets: ${Object.keys(MODEL_PRESETS).join(', ')}
  or a shape: --layers N --hidden D --kv-heads H --head-dim K --attention mha|gqa|mla
              --params P (e.g. 70e9 or 70B) [--active-params P] [--dtype bf16|fp16|fp8]
              [--kv-dtype bf16|fp8] [--kv-lora-rank 512 --rope-dim 64 for mla]
gpu presets:   ${Object.keys(GPU_PRESETS).join(', ')}
  or figures:  --gpu-mem-gb G --bandwidth-tbs B --tflops T
options:
  --gpus N              GPUs per worker (tensor parallel), default 1
  --mem-fraction F      share of GPU memory the engine takes (vLLM gpu_memory_utilization), default 0.9
  --mfu F               model FLOP utilisation for prefill, default 0.5
  --session-tokens N    tokens one session keeps cached (default: M* if --target-ttft-ms, else 32768)
  --target-ttft-ms T    suggest M*, the largest working set whose prefill meets T
  --hit-rate F          cache hit rate assumed for M*, default 0.9
  --sessions N          concurrent sessions to size the fleet for
  --json                print the plan as JSON`;

function parseCount(s: string, flag: string): number {
  const m = /^([0-9.]+(?:e[0-9]+)?)([kmbt]?)$/i.exec(s.trim());
  if (!m) throw new Error(`${flag}: not a number: ${s}`);
  const mult = { '': 1, k: 1e3, m: 1e6, b: 1e9, t: 1e12 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'b' | 't'];
  return Number(m[1]) * mult;
}

function dtype(s: string | undefined, dflt: number, flag: string): number {
  if (s === undefined) return dflt;
  const b = DTYPE_BYTES[s.toLowerCase()];
  if (b === undefined) throw new Error(`${flag}: unknown dtype ${s} (known: ${Object.keys(DTYPE_BYTES).join(', ')})`);
  return b;
}

type Values = Record<string, string | boolean | undefined>;

function buildModel(v: Values): ModelSpec {
  const s = (k: string): string | undefined => v[k] as string | undefined;
  if (s('model')) {
    const base = { ...modelPreset(s('model')!) };
    if (s('dtype')) base.weightBytes = dtype(s('dtype'), base.weightBytes, '--dtype');
    if (s('kv-dtype')) base.kvBytes = dtype(s('kv-dtype'), base.kvBytes, '--kv-dtype');
    return base;
  }
  for (const k of ['layers', 'hidden', 'params']) if (!s(k)) throw new Error(`--${k} is required without --model`);
  const attention = (s('attention') ?? 'gqa') as Attention;
  if (!['mha', 'gqa', 'mla'].includes(attention)) throw new Error(`--attention must be mha, gqa or mla`);
  if (attention !== 'mla' && (!s('kv-heads') || !s('head-dim')))
    throw new Error('--kv-heads and --head-dim are required for mha/gqa');
  const params = parseCount(s('params')!, '--params');
  const weightBytes = dtype(s('dtype'), 2, '--dtype');
  return {
    name: 'custom',
    layers: parseCount(s('layers')!, '--layers'),
    hidden: parseCount(s('hidden')!, '--hidden'),
    kvHeads: s('kv-heads') ? parseCount(s('kv-heads')!, '--kv-heads') : 1,
    headDim: s('head-dim') ? parseCount(s('head-dim')!, '--head-dim') : 0,
    attention,
    params,
    activeParams: s('active-params') ? parseCount(s('active-params')!, '--active-params') : params,
    weightBytes,
    kvBytes: dtype(s('kv-dtype'), weightBytes >= 2 ? weightBytes : 2, '--kv-dtype'),
    mlaLatent: s('kv-lora-rank') ? parseCount(s('kv-lora-rank')!, '--kv-lora-rank') : undefined,
    mlaRope: s('rope-dim') ? parseCount(s('rope-dim')!, '--rope-dim') : undefined,
    flopsFromParams: s('active-params') !== undefined,
  };
}

function buildGpu(v: Values): GpuSpec {
  const s = (k: string): string | undefined => v[k] as string | undefined;
  if (s('gpu')) return gpuPreset(s('gpu')!);
  if (s('gpu-mem-gb') && s('tflops')) {
    return {
      name: 'custom',
      memGiB: Number(s('gpu-mem-gb')),
      tflops: Number(s('tflops')),
      bandwidthTBs: Number(s('bandwidth-tbs') ?? 3),
    };
  }
  return gpuPreset('H100-80G');
}

const fmtTokens = (n: number): string => (n >= 1024 ? `${(n / 1024).toFixed(n % 1024 === 0 ? 0 : 1)}k` : String(n));

export function renderPlan(p: Plan): string {
  const c = p.capacity;
  const L: string[] = [];
  L.push(`model ${p.model} on ${p.gpus}× ${p.gpu}`);
  L.push(
    `  KV per token        ${(c.kvBytesPerToken / 1024).toFixed(1)} KiB (${c.kvBytesPerToken.toLocaleString('en-US')} B)`,
  );
  L.push(
    `  weights             ${c.weightsGiB.toFixed(1)} GiB; engine memory ${c.usableGiB.toFixed(1)} GiB; KV pool ${c.kvGiB.toFixed(1)} GiB`,
  );
  L.push(
    `  KV tokens per worker ${c.kvTokens.toLocaleString('en-US')}${c.kvTokens <= 0 ? '  (weights do not fit: add GPUs)' : ''}`,
  );
  L.push('', '  prefill (TTFT) by prompt length and cache hit rate');
  const rates = [...new Set(p.ttft.map((r) => r.hitRate))];
  L.push('  tokens  ' + rates.map((h) => `hit ${h.toFixed(2)}`.padStart(22)).join(''));
  for (const tokens of [...new Set(p.ttft.map((r) => r.tokens))]) {
    const cells = rates.map((h) => {
      const r = p.ttft.find((x) => x.tokens === tokens && x.hitRate === h)!;
      return `${r.tflop.toFixed(1)} TFLOP ${r.ms >= 1000 ? (r.ms / 1000).toFixed(2) + ' s' : r.ms.toFixed(0) + ' ms'}`.padStart(
        22,
      );
    });
    L.push(`  ${fmtTokens(tokens).padStart(6)}  ${cells.join('')}`);
  }
  L.push('', `  sessions of ${p.sessionTokens.toLocaleString('en-US')} tokens per worker: ${p.sessionsPerWorker}`);
  if (p.mStar) {
    L.push(
      `  M* for TTFT ≤ ${p.mStar.targetTtftMs} ms: ${p.mStar.tokens.toLocaleString('en-US')} tokens at hit rate ${p.mStar.hitRate} (cold: ${p.mStar.tokensCold.toLocaleString('en-US')})`,
    );
  }
  if (p.fleet)
    L.push(`  fleet for ${p.fleet.sessions} concurrent sessions: ${p.fleet.workers} workers (${p.fleet.gpus} GPUs)`);
  return L.join('\n');
}

export async function run(argv: string[]): Promise<number> {
  const str = { type: 'string' } as const;
  let v: Values;
  try {
    v = parseArgs({
      args: argv,
      options: {
        model: str,
        gpu: str,
        layers: str,
        hidden: str,
        'kv-heads': str,
        'head-dim': str,
        attention: str,
        params: str,
        'active-params': str,
        dtype: str,
        'kv-dtype': str,
        'kv-lora-rank': str,
        'rope-dim': str,
        'gpu-mem-gb': str,
        'bandwidth-tbs': str,
        tflops: str,
        gpus: str,
        'mem-fraction': str,
        mfu: str,
        'session-tokens': str,
        'target-ttft-ms': str,
        'hit-rate': str,
        sessions: str,
        json: { type: 'boolean' },
      },
      strict: true,
    }).values;
    const n = (k: string): number | undefined =>
      v[k] === undefined ? undefined : parseCount(v[k] as string, `--${k}`);
    const p = plan({
      model: v.model || v.layers ? buildModel(v) : modelPreset('llama-3.1-8b'),
      gpu: buildGpu(v),
      gpus: n('gpus'),
      memoryFraction: n('mem-fraction'),
      mfu: n('mfu'),
      sessionTokens: n('session-tokens'),
      targetTtftMs: n('target-ttft-ms'),
      planHitRate: n('hit-rate'),
      sessions: n('sessions'),
    });
    process.stdout.write((v.json ? JSON.stringify(p, null, 2) : renderPlan(p)) + '\n');
    return 0;
  } catch (err) {
    process.stderr.write(`ctxgate plan: ${(err as Error).message}\n`);
    return 2;
  }
}
