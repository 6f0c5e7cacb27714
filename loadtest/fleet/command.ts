// `ctxgate bench fleet`: every policy over identical arrivals on a simulated fleet (virtual clock,
// vLLM engine models), one row each; --json for the documented shape. Policy settings a deployer
// would configure (block size, prefill throughput, KV budget) are derived from the run's options.
import { ADMISSION_DEFAULTS, DEFAULT_DISPATCH_BY_ENGINE } from '../../kvplanner/admission/admission-defaults.ts';
import { POLICY_NAMES } from '../../kvplanner/policy-registry.ts';
import type { PolicyOptions } from '../../kvplanner/types.ts';
import { PRESETS, type TimingModel } from '../sim-worker/timing.ts';
import { bool, num, parseArgs, rejectUnknown, str } from '../replay/args.ts';
import { createProgress } from '../replay/progress.ts';
import { fluidReport, formatFluid } from './fluid-report.ts';
import { simulateFleet } from './simulator.ts';
import { SDK_RETRIES } from './client-model.ts';
import { formatEngineTime, formatFleetTable, formatTimeline, summarize, type FleetRunSummary } from './summary.ts';
import { chatTemplateFor } from '../replay/chat-template.ts';
import { bandSummary, formatBand, parseRateBand } from './band.ts';
import { inputKind, loadFleetInputs } from './inputs.ts';
import {
  DEFAULT_OUTPUT_TOKENS,
  DEFAULT_SESSION_BLOCK_TOKENS,
  DEFAULT_SESSION_RATE_PER_S,
  DEFAULT_THINK_MS,
} from './sessions.ts';

export const DEFAULT_FLEET_WORKERS = 8;
/** KV budget per worker, tokens: Qwen3-32B on one H200 holds ~230k after weights; 200k leaves headroom. */
export const DEFAULT_FLEET_KV_TOKENS = 200_000;
export const DEFAULT_FLEET_PRESET = 'qwen3-32b-h200';
export const DEFAULT_FLEET_POLICIES = [
  'round_robin',
  'least_load',
  'session_hash',
  'prefix_hash',
  'sglang_cache_aware',
  'smg_cache_aware',
  'dynamo_kv',
  'llmd_precise',
  'ctxgate',
];

/** The tokenizer of a timing preset's model family (session inputs are rendered with it). */
export function presetTokenizer(preset: string): string {
  return preset.startsWith('llama') ? 'llama3_1' : 'qwen3';
}

export const help = `ctxgate bench fleet TRACE... [options]

Discrete-event simulation of a fleet of vLLM engines (virtual clock: continuous batching,
chunked prefill, prefix cache, KV admission and preemption) behind each routing policy, the
same arrivals for every policy. TRACE: Mooncake JSONL (timestamp, input_length, output_length,
hash_ids of 512-token blocks); several files share one clock and one block namespace;
two-kinds[:SEED] generates two unlike tenants' workload (loadtest/fleet/two-kinds.ts) in place of a file.
Or agent sessions (files or folders): the gateway's capture files and request-stream JSONL,
mini-swe-agent .traj.json, SWE-agent .traj, aider .llm.history. Each call is rendered with the
chat template and tokenised (--tokenizer), its blocks hashed as engines and the gateway chain
them; sessions start as a seeded Poisson process (--rate), and each session's next call is sent
--think-ms after the previous answer (closed loop: the same starts for every policy).

  --workers N           engines (default ${DEFAULT_FLEET_WORKERS})
  --kv-tokens N         KV capacity per engine, tokens (default ${DEFAULT_FLEET_KV_TOKENS})
  --block-size N        engine KV block size; must divide the trace's block (default: the trace's,
                        512 for Mooncake, whose hash ids carry no finer reuse information); for
                        sessions the block the prompts are hashed in (default ${DEFAULT_SESSION_BLOCK_TOKENS})
  --rate R              sessions: session starts per second, Poisson (default ${DEFAULT_SESSION_RATE_PER_S}; × --rate-scale)
  --think-ms MS         sessions: agent time between an answer and the next call (default ${DEFAULT_THINK_MS})
  --output-tokens N     sessions: answer length where the recording has neither usage nor the
                        answer (default ${DEFAULT_OUTPUT_TOKENS})
  --tokenizer NAME      sessions: qwen3 | llama3_1 | deepseek_v3 | o200k_base | cl100k_base | DIR
                        (default: the preset's family, qwen3 or llama3_1)
  --chat-template FILE  sessions: the template to render with (default: the tokenizer's own)
  --preset NAME         timing model: ${Object.keys(PRESETS).join(', ')} (default ${DEFAULT_FLEET_PRESET})
  --rate-scale X        arrivals X times faster (default 1)
  --rate-band LO:HI:STEP  instead of one rate: every policy at each rate from LO to HI (or a comma
                        list), summed up per policy: p90 TTFT ÷ the best other policy's (geometric mean
                        and worst over the band; round_robin not a rival), ÷ round_robin's, mean hit
                        gap to the best other; --json {"band":{rates, policies:[...]}, "runs":[...]}
  --duration-s S        only arrivals in the first S seconds (after scaling)
  --policies a,b,...    default: ${DEFAULT_FLEET_POLICIES.join(',')}
  --index approx|precise  approx (default): each policy learns from its own decisions;
                        precise: policies with a block index read the engines' KV events
  --opt POLICY.KEY=VALUE  a policy option, repeatable (e.g. --opt ctxgate.epsilon=0.5)
  --max-batched-tokens N  chunked-prefill token budget per step (default 8192)
  --max-seqs N          running requests per engine (default 256)
  --engine vllm|sglang  engine model: vLLM V1 (block pool, mixed prefill+decode steps; default) or
                        SGLang (radix cache with LRU leaves, prefill-or-decode batches, LPM order,
                        retraction; --index precise: its radix tree's events)
  --admission full-prompt|first-chunk  full-prompt (default, vLLM scheduler_reserve_full_isl):
                        a request is admitted when its whole prompt's blocks are free;
                        first-chunk: when its first chunk's are (older vLLM; thrashes on long prompts)
  --dispatch arrival|admission  default: the gateway's for the engine (admission for vLLM, arrival
                        for SGLang), so ctxgate's row is ctxgate as deployed; arrival: every policy
                        picks when the call arrives (for vLLM a labelled extra, not the product);
                        admission: ctxgate binds late (a call whose prefix one worker holds goes at
                        arrival; the others wait at the gateway until a worker can admit them, then
                        ctxgate picks among those); every other policy still picks at arrival
                        (llm-d's flow control is off by default; Dynamo's router queue, on by
                        default, is not modelled)
  --max-waiting N       admission: a worker can admit while its engine has fewer waiting (default ${ADMISSION_DEFAULTS.max_waiting})
  --max-kv-usage X      admission: ... and KV usage under X (default ${ADMISSION_DEFAULTS.max_kv_usage})
  --locality-wait-ms MS admission: a held call waits this long for the worker holding its prefix (default ${ADMISSION_DEFAULTS.locality_wait_ms})
  --locality-min-tokens N  admission: prefix tokens only one worker holds that make it the call's holder (default ${ADMISSION_DEFAULTS.locality_min_tokens})
  --locality-window N   admission: held calls a free worker looks at (default ${ADMISSION_DEFAULTS.locality_window})
  --max-wait-ms MS      admission: a held call spills (sent on as at arrival) after this long (default ${ADMISSION_DEFAULTS.max_wait_ms})
  --release-ms-per-token X  admission: a held call is released as if it arrived X ms per uncached
                        prompt token later (cheap prefills first; default ${ADMISSION_DEFAULTS.release_ms_per_token})
  --release-max-slack-ms MS  admission: ... but at most MS later (default ${ADMISSION_DEFAULTS.release_max_slack_ms})
  --release-ms-per-held MS  admission: ... and at most MS per call its tenant holds at each release
                        (0: no such bound; default ${ADMISSION_DEFAULTS.release_ms_per_held})
  --release-slack-per-drain R  admission: ... and at most R × the time the held calls take to
                        leave at the recent release rate (0: no such bound; default ${ADMISSION_DEFAULTS.release_slack_per_drain})
  --client-timeout-s S  clients give up on a call whose response head is not back S s after each
                        send (the SDKs: 600) and resend it (client-model.ts); held calls given up on
                        leave the gateway's queue, sent ones keep the engine busy (default: clients wait)
  --client-retries N    ... resends before the call fails (default ${SDK_RETRIES}, the SDKs')
  --client-mode stream|non-stream  ... the head comes with the first token (stream, default) or
                        with the whole answer
  --tenants K           calls spread over K tenants by a hash of the session (or the prompt's first
                        two blocks); prints each tenant's TTFT p90 and their spread (default 1)
  --timeline S          also print, per policy, the fleet in windows of S seconds: arrivals,
                        TTFT p50/p90 of the window's arrivals, engine time in prefill / decode-only
                        steps (and decode-only while requests waited for KV), mean waiting, KV usage
  --seed N              seed for the policies that sample and for session starts (default 1)
  --json                {"runs":[{config, requests, completed, hit_rate, prefill_tokens, ttft_ms,
                        e2e_ms, throughput_tok_s, imbalance, queue_wait_ms, preemptions, engine_time,
                        slowest_decile, branches (per branch: requests, hit_rate, ttft_p90_ms), ...}], "fluid":[{hit_rate, basis (none, best_run, hindsight),
                        p90_ttft_ms_prefill_only, p90_ttft_ms_with_decode, prefill_load, decode_load}],
                        "fluid_hindsight":{hit_rate, half_round_robin:{target_ms, prefill_only_ms,
                        riding_share_needed}}}`;

function parseOpts(vals: string[], policies: string[]): Map<string, PolicyOptions> {
  const out = new Map<string, PolicyOptions>();
  for (const v of vals) {
    const m = /^([a-z_]+)\.([a-z_]+)=(.*)$/.exec(v);
    if (!m || !policies.includes(m[1]))
      throw new Error(`--opt ${v}: expected POLICY.KEY=VALUE with POLICY one of ${policies.join(', ')}`);
    const raw = m[3];
    const val: unknown =
      raw === 'true' ? true : raw === 'false' ? false : Number.isFinite(Number(raw)) && raw !== '' ? Number(raw) : raw;
    (out.get(m[1]) ?? out.set(m[1], {}).get(m[1])!)[m[2]] = val;
  }
  return out;
}

/** What a deployer would tell each policy about this fleet. */
export function fleetPolicyOptions(
  policy: string,
  t: TimingModel,
  blockTokens: number,
  kvTokens: number,
  seed: number,
  engine: 'vllm' | 'sglang' = 'vllm',
): PolicyOptions {
  switch (policy) {
    case 'ctxgate':
      return {
        block_size: blockTokens,
        engine_flavor: engine,
        index_stride: 1,
        prefill_tokens_per_s: Math.round((t.mfu * t.peakFlops) / (2 * t.params)),
        default_kv_tokens: kvTokens,
      };
    case 'dynamo_kv':
    case 'llmd_precise':
      return { block_size: blockTokens, seed };
    case 'prefix_hash':
      // its 256-token window falls inside the first trace block: the block's text code (8 chars = 2 "tokens")
      return { prefix_token_count: 2 };
    default:
      return {};
  }
}

export async function run(argv: string[]): Promise<number> {
  const known = new Set([
    'workers',
    'kv-tokens',
    'block-size',
    'preset',
    'rate-scale',
    'rate-band',
    'duration-s',
    'policies',
    'index',
    'opt',
    'max-batched-tokens',
    'max-seqs',
    'admission',
    'engine',
    'timeline',
    'dispatch',
    'max-waiting',
    'max-kv-usage',
    'locality-wait-ms',
    'locality-min-tokens',
    'locality-window',
    'max-wait-ms',
    'release-ms-per-token',
    'release-max-slack-ms',
    'release-ms-per-held',
    'release-slack-per-drain',
    'client-timeout-s',
    'client-retries',
    'client-mode',
    'tenants',
    'seed',
    'json',
    'rate',
    'think-ms',
    'output-tokens',
    'tokenizer',
    'chat-template',
  ]);
  let a;
  try {
    a = parseArgs(argv, new Set(['json']), new Set());
    rejectUnknown(a, known);
  } catch (err) {
    process.stderr.write(`ctxgate bench fleet: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    if (a.positional.length === 0) throw new Error('give at least one TRACE file');
    const json = bool(a, 'json');
    const workers = Math.floor(num(a, 'workers', DEFAULT_FLEET_WORKERS, 1));
    const kvTokens = Math.floor(num(a, 'kv-tokens', DEFAULT_FLEET_KV_TOKENS, 1));
    const presetName = str(a, 'preset') ?? DEFAULT_FLEET_PRESET;
    const timing = PRESETS[presetName];
    if (!timing) throw new Error(`unknown --preset '${presetName}' (known: ${Object.keys(PRESETS).join(', ')})`);
    const durationS = str(a, 'duration-s') !== undefined ? num(a, 'duration-s', 0, 0) : undefined;
    const index = str(a, 'index') ?? 'approx';
    if (index !== 'approx' && index !== 'precise') throw new Error(`--index must be approx or precise, got '${index}'`);
    const policies = (str(a, 'policies') ?? DEFAULT_FLEET_POLICIES.join(','))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    for (const p of policies)
      if (!POLICY_NAMES().includes(p)) throw new Error(`unknown policy '${p}' (known: ${POLICY_NAMES().join(', ')})`);
    const opts = parseOpts(a.flags.get('opt') ?? [], policies);
    const seed = Math.floor(num(a, 'seed', 1, 0));
    const kind = await inputKind(a.positional);
    if (kind === 'mooncake')
      for (const k of ['rate', 'think-ms', 'output-tokens', 'tokenizer', 'chat-template'])
        if (str(a, k) !== undefined)
          throw new Error(`--${k} applies to agent sessions (a Mooncake trace keeps its timestamps and lengths)`);
    const tokenizer = str(a, 'tokenizer') ?? presetTokenizer(presetName);
    const band = str(a, 'rate-band') !== undefined ? parseRateBand(str(a, 'rate-band')!) : undefined;
    if (band && (str(a, 'rate-scale') !== undefined || str(a, 'timeline') !== undefined))
      throw new Error('--rate-band replaces --rate-scale and prints no timeline');
    // the product's default for the engine (DEFAULT_DISPATCH_BY_ENGINE): ctxgate's row is ctxgate as deployed
    const dispatchSet = str(a, 'dispatch') !== undefined;
    const dispatch =
      str(a, 'dispatch') ?? DEFAULT_DISPATCH_BY_ENGINE[str(a, 'engine') === 'sglang' ? 'sglang' : 'vllm'];
    if (dispatch !== 'arrival' && dispatch !== 'admission')
      throw new Error(`--dispatch must be arrival or admission, got '${dispatch}'`);
    const admissionCheck = {
      max_waiting: Math.floor(num(a, 'max-waiting', ADMISSION_DEFAULTS.max_waiting, 1)),
      max_kv_usage: num(a, 'max-kv-usage', ADMISSION_DEFAULTS.max_kv_usage, 1e-9),
      locality_wait_ms: num(a, 'locality-wait-ms', ADMISSION_DEFAULTS.locality_wait_ms, 0),
      locality_min_tokens: num(a, 'locality-min-tokens', ADMISSION_DEFAULTS.locality_min_tokens, 0),
      locality_window: Math.floor(num(a, 'locality-window', ADMISSION_DEFAULTS.locality_window, 1)),
      max_wait_ms: num(a, 'max-wait-ms', ADMISSION_DEFAULTS.max_wait_ms, 1),
      release_ms_per_token: num(a, 'release-ms-per-token', ADMISSION_DEFAULTS.release_ms_per_token, 0),
      release_max_slack_ms: num(a, 'release-max-slack-ms', ADMISSION_DEFAULTS.release_max_slack_ms, 0),
      release_ms_per_held: num(a, 'release-ms-per-held', ADMISSION_DEFAULTS.release_ms_per_held, 0),
      release_slack_per_drain: num(a, 'release-slack-per-drain', ADMISSION_DEFAULTS.release_slack_per_drain, 0),
    };
    const clientTimeoutS = str(a, 'client-timeout-s') !== undefined ? num(a, 'client-timeout-s', 600, 1e-3) : undefined;
    const clientMode = str(a, 'client-mode') ?? 'stream';
    if (clientMode !== 'stream' && clientMode !== 'non-stream')
      throw new Error(`--client-mode must be stream or non-stream, got '${clientMode}'`);
    const client =
      clientTimeoutS !== undefined
        ? {
            timeoutMs: clientTimeoutS * 1000,
            retries: Math.floor(num(a, 'client-retries', SDK_RETRIES, 0)),
            stream: clientMode === 'stream',
          }
        : undefined;
    if (!client && (str(a, 'client-retries') !== undefined || str(a, 'client-mode') !== undefined))
      throw new Error('--client-retries and --client-mode need --client-timeout-s');
    const tenants = Math.floor(num(a, 'tenants', 1, 1));
    const dispatchNote =
      dispatch === 'admission'
        ? 'dispatch: ctxgate admission (late binding: calls wait at the gateway until a worker can admit them); every other policy at arrival: ' +
          "llm-d's default (its flow control is opt-in); Dynamo's router queue (router_queue_threshold 4.0 by default) is not modelled for dynamo_kv " +
          '(an emulation of it moved dynamo_kv p90 TTFT by <= 0.5 % on the conversation half, 8 vLLM workers, x1 and x2)\n'
        : dispatchSet && str(a, 'engine') !== 'sglang'
          ? "dispatch: every policy at arrival (--dispatch arrival; ctxgate's default for vLLM engines is admission: this ctxgate row is not the product as deployed)\n"
          : "dispatch: every policy at arrival (ctxgate's default for SGLang engines)\n";
    // every policy over the inputs at one rate scale
    const runAt = async (rateScale: number) => {
      const reqs = await loadFleetInputs(a.positional, {
        rateScale,
        durationS,
        sessions: {
          tokenizer,
          chatTemplateFile: kind === 'sessions' ? chatTemplateFor(tokenizer, str(a, 'chat-template')) : undefined,
          blockTokens: Math.floor(num(a, 'block-size', DEFAULT_SESSION_BLOCK_TOKENS, 1)),
          ratePerS: num(a, 'rate', DEFAULT_SESSION_RATE_PER_S, 1e-9),
          thinkMs: num(a, 'think-ms', DEFAULT_THINK_MS, 0),
          defaultOutputTokens: Math.floor(num(a, 'output-tokens', DEFAULT_OUTPUT_TOKENS, 1)),
          seed,
        },
      });
      if (reqs.length === 0) throw new Error('the traces hold no requests');
      const traceBlock = reqs[0].blockTokens;
      const blockSize = Math.floor(num(a, 'block-size', traceBlock, 1));
      const maxBatchedTokens = Math.floor(num(a, 'max-batched-tokens', 8192, 1));
      const maxSeqs = Math.floor(num(a, 'max-seqs', 256, 1));
      const engine = str(a, 'engine') ?? 'vllm';
      if (engine !== 'vllm' && engine !== 'sglang') throw new Error(`--engine must be vllm or sglang, got '${engine}'`);
      const admission = str(a, 'admission') ?? 'full-prompt';
      if (admission !== 'full-prompt' && admission !== 'first-chunk')
        throw new Error(`--admission must be full-prompt or first-chunk, got '${admission}'`);

      const timelineS = str(a, 'timeline') !== undefined ? num(a, 'timeline', 60, 1) : undefined;
      const timelines: string[] = [];
      const progress = createProgress(!json);
      const runs: FleetRunSummary[] = [];
      for (const policy of policies) {
        progress.start(reqs.length, policy);
        let shown = 0;
        const t0 = performance.now();
        const res = simulateFleet(
          reqs,
          {
            policy,
            policyOptions: {
              ...fleetPolicyOptions(policy, timing, traceBlock, kvTokens, seed, engine),
              ...opts.get(policy),
            },
            workers,
            kvTokens,
            blockSize,
            timing,
            maxBatchedTokens,
            maxSeqs,
            reserveFullPrompt: admission === 'full-prompt',
            engine,
            index,
            timelineMs: timelineS !== undefined ? timelineS * 1000 : undefined,
            // late binding is ctxgate's; the baselines dispatch at arrival (llm-d's default: its flow
            // control is opt-in; Dynamo's router queues by default, which dynamo_kv does not model:
            // the output says so)
            dispatch: policy === 'ctxgate' ? dispatch : 'arrival',
            admission: admissionCheck,
            client,
            tenants,
          },
          (done) => {
            while (shown < done) {
              progress.tick();
              shown++;
            }
          },
        );
        progress.stop();
        if (res.timeline) timelines.push(formatTimeline(policy, res));
        runs.push(
          summarize(res, {
            preset: presetName,
            rateScale,
            index,
            wallS: (performance.now() - t0) / 1000,
            requests: reqs.length,
          }),
        );
      }
      return { reqs, runs, timelines, engine, blockSize };
    };
    if (band) {
      const perRate: FleetRunSummary[][] = [];
      let engine = '';
      for (const rate of band) {
        const at = await runAt(rate);
        perRate.push(at.runs);
        engine = at.engine;
      }
      const rows = bandSummary(perRate);
      if (json)
        process.stdout.write(
          JSON.stringify({ band: { rates: band, policies: rows }, runs: perRate.flat() }, null, 2) + '\n',
        );
      else
        process.stdout.write(
          `fleet: ${workers} × ${presetName} (${engine} engine model), kv ${kvTokens} tokens/engine, index ${index}\n` +
            'virtual-time simulation\n' +
            dispatchNote +
            '\n' +
            formatBand(rows, band) +
            '\n',
        );
      return 0;
    }
    const rateScale = num(a, 'rate-scale', 1, 1e-9);
    const { reqs, runs, timelines, engine, blockSize } = await runAt(rateScale);
    // a closed loop's later calls come when the previous answer does (arrivalMs is only the
    // earliest they could): FCFS over those times would pile a whole session onto its start
    const fleet = { workers, kvTokens, timing };
    const fluid = kind === 'mooncake' ? fluidReport(reqs, runs, fleet) : undefined;
    if (json) {
      const hindsight = fluid && { hit_rate: fluid.hindsight_hit_rate, half_round_robin: fluid.half_round_robin };
      process.stdout.write(
        JSON.stringify({ runs, fluid: fluid?.rows ?? [], fluid_hindsight: hindsight }, null, 2) + '\n',
      );
    } else {
      process.stdout.write(
        `fleet: ${reqs.length} requests${kind === 'sessions' ? ` in ${new Set(reqs.map((r) => r.sessionId)).size} sessions (closed loop, tokenizer ${tokenizer})` : ''}, ${workers} × ${presetName} (${engine} engine model), kv ${kvTokens} tokens/engine, block ${blockSize}, rate ×${rateScale}, index ${index}\n` +
          'virtual-time simulation; wall_s per run in --json (noisy on a shared machine)\n' +
          dispatchNote +
          '\n',
      );
      process.stdout.write(
        formatFleetTable(runs) + '\n\n' + formatEngineTime(runs) + '\n\n' + formatFluid(fluid, fleet) + '\n',
      );
      for (const t of timelines) process.stdout.write('\n' + t + '\n');
    }
    return 0;
  } catch (err) {
    process.stderr.write(`ctxgate bench fleet: ${(err as Error).message}\n`);
    return 2;
  }
}
