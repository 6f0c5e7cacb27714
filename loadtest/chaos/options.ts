// bench chaos's command line: options read and checked (bench-cli.ts), the run's defaults, and
// --gateway-env's NAME=VALUE list. Pure.
import { readOptions } from './bench-cli.ts';
import { faultsOf } from './faults.ts';

export const DEFAULTS = { durationS: 60, sessions: 50, workers: 4, killEveryS: 10, rounds: 1 } as const;

/** The gateway's pipeline: the default (layout ctxgate) or passthrough, a labelled extra. */
export type ChaosLayout = 'ctxgate' | 'passthrough';

/** The gate as configured, when not the engine's default (vllm: the admission gate, release order):
 *  --dispatch arrival is what SGLang and plain OpenAI-compatible upstreams get by default (no gate),
 *  --release-ms-per-token 0 the gate in arrival order (the default before the release order). */
export interface DispatchChoice {
  dispatch?: 'arrival' | 'admission';
  releaseMsPerToken?: number;
}

/** --gateway-env 'K=V,K2=V2': variables for the gateway process alone (not the workers, not Redis);
 *  a value may hold commas where what follows one is not NAME= (MALLOC_CONF's options). */
export function gatewayEnvOf(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (v === undefined) return out;
  // split before each NAME=: a value may hold commas (MALLOC_CONF=background_thread:true,narenas:2)
  for (const kv of v.split(/,(?=\s*[A-Za-z_][A-Za-z0-9_]*=)/)) {
    const eq = kv.indexOf('=');
    const k = kv.slice(0, eq).trim();
    if (eq <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`--gateway-env: ${kv} is not NAME=VALUE`);
    out[k] = kv.slice(eq + 1);
  }
  return out;
}

function dispatchOf(v: string | undefined): DispatchChoice['dispatch'] {
  if (v === undefined || v === 'arrival' || v === 'admission') return v;
  throw new Error('--dispatch must be arrival or admission');
}

function layoutOf(v: string | undefined): ChaosLayout {
  if (v === undefined || v === 'ctxgate') return 'ctxgate';
  if (v === 'passthrough') return 'passthrough';
  throw new Error('--layout must be ctxgate or passthrough');
}

export function parseChaosArgs(argv: string[]) {
  const a = readOptions(
    argv,
    [
      'duration-s',
      'sessions',
      'workers',
      'kill-every-s',
      'layout',
      'heap-snapshots',
      'faults',
      'dispatch',
      'release-ms-per-token',
      'rounds',
      'gateway-env',
    ],
    ['redis', 'json', 'trim-probe'],
  );
  return {
    durationS: a.num('duration-s', DEFAULTS.durationS),
    sessions: a.int('sessions', DEFAULTS.sessions),
    workers: a.int('workers', DEFAULTS.workers),
    killEveryS: a.num('kill-every-s', DEFAULTS.killEveryS),
    rounds: a.int('rounds', DEFAULTS.rounds, 1),
    gatewayEnv: gatewayEnvOf(a.str('gateway-env')),
    dispatch: dispatchOf(a.str('dispatch')),
    releaseMsPerToken: a.str('release-ms-per-token') === undefined ? undefined : a.num('release-ms-per-token', 0, 0),
    redis: a.bool('redis'),
    layout: layoutOf(a.str('layout')),
    faults: faultsOf(a.str('faults')),
    heapSnapshots: a.str('heap-snapshots'),
    json: a.bool('json'),
    trimProbe: a.bool('trim-probe'),
  };
}
