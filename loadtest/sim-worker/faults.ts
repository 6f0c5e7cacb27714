// Fault injection: worker-wide knobs (CLI flags or setFault at runtime) and a per-request
// `x-sim-fault` header, e.g. `status=503`, `hang=2000`, `die-after-chunks=3`, `reset`,
// `die-after-headers` (200 and its headers, then the connection drops before any body byte: an
// engine that accepted the request and died in prefill), combinable with ';' or ','. Header values win over worker-wide ones.
import { rng } from './generate.ts';

export interface FaultConfig {
  /** Fraction of requests answered with `failStatus` (seeded, reproducible). */
  failRate: number;
  failStatus: number;
  /** Delay before the first byte of every response, ms. */
  hangMs: number;
  /** Streams: destroy the socket after this many data chunks (0 = off). */
  dieAfterChunks: number;
  /** Destroy every request's socket before any byte. */
  reset: boolean;
  /** Send 200 and its headers, then drop the connection before the first body byte. */
  dieAfterHeaders: boolean;
}

export interface RequestFault {
  status?: number;
  hangMs: number;
  dieAfterChunks: number;
  reset: boolean;
  dieAfterHeaders: boolean;
}

export const DEFAULT_FAULTS: FaultConfig = {
  failRate: 0,
  failStatus: 503,
  hangMs: 0,
  dieAfterChunks: 0,
  reset: false,
  dieAfterHeaders: false,
};

export function parseFaultHeader(value: string | undefined): Partial<RequestFault> {
  const out: Partial<RequestFault> = {};
  if (!value) return out;
  for (const part of value.split(/[;,]/)) {
    const [k, v] = part
      .trim()
      .split('=')
      .map((s) => s.trim());
    if (!k) continue;
    const n = Number(v);
    if (k === 'reset') out.reset = true;
    else if (k === 'die-after-headers') out.dieAfterHeaders = true;
    else if (k === 'status' && Number.isFinite(n)) out.status = n;
    else if (k === 'hang' && Number.isFinite(n)) out.hangMs = n;
    else if (k === 'die-after-chunks' && Number.isFinite(n)) out.dieAfterChunks = n;
  }
  return out;
}

export class FaultInjector {
  private config: FaultConfig;
  private readonly rand: () => number;

  constructor(config: Partial<FaultConfig>, seed: number) {
    this.config = { ...DEFAULT_FAULTS, ...config };
    this.rand = rng(seed ^ 0x5eed);
  }

  set(f: Partial<FaultConfig>): void {
    this.config = { ...this.config, ...f };
  }

  get(): FaultConfig {
    return { ...this.config };
  }

  /** The fault to apply to one request. */
  decide(header: string | undefined): RequestFault {
    const h = parseFaultHeader(header);
    const c = this.config;
    const draw = c.failRate > 0 ? this.rand() : 1;
    return {
      status: h.status ?? (draw < c.failRate ? c.failStatus : undefined),
      hangMs: h.hangMs ?? c.hangMs,
      dieAfterChunks: h.dieAfterChunks ?? c.dieAfterChunks,
      reset: h.reset ?? c.reset,
      dieAfterHeaders: h.dieAfterHeaders ?? c.dieAfterHeaders,
    };
  }
}
