// Runs several fleet configurations over the same (already profiled) traffic, one fresh fleet
// per configuration so every run starts with cold caches, in the order given. The policy's own
// counters are read from the fleet before it closes.
import type { Session } from '../formats/types.ts';
import type { RunConfig } from './config-spec.ts';
import { summarise } from './metrics.ts';
import { replaySessions } from './runner.ts';
import type { CallRecord, FleetFactory, Pricing, RunSummary } from './types.ts';

export interface CompareOptions {
  concurrency: number;
  thinkMs: number;
  sessionHeader?: string;
  pricing: Pricing;
  profile: string;
  startFleet: FleetFactory;
  onCall?: (config: RunConfig, rec: CallRecord) => void;
  onRunStart?: (config: RunConfig, index: number) => void;
}

export async function runComparison(
  sessions: Session[],
  configs: RunConfig[],
  o: CompareOptions,
): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  for (let i = 0; i < configs.length; i++) {
    const cfg = configs[i];
    o.onRunStart?.(cfg, i);
    const fleet = await o.startFleet(cfg.spec);
    try {
      const modeled = cfg.spec.timeScale === 0;
      const t0 = performance.now();
      const records = await replaySessions(sessions, fleet, {
        concurrency: o.concurrency,
        thinkMs: o.thinkMs,
        sessionHeader: o.sessionHeader,
        modeledTtft: modeled,
        onCall: (r) => o.onCall?.(cfg, r),
      });
      const wall = performance.now() - t0;
      const s = cfg.spec;
      const policyStats = await fleet.policyStats?.();
      const summary = summarise(
        {
          label: cfg.label,
          layout: s.layout,
          policy: s.policy,
          ...(s.policyOptions ? { policy_options: s.policyOptions } : {}),
          budget: s.budget,
          workers: s.workers,
          flavor: s.flavor,
          kv_tokens: s.kvTokens,
          block_size: s.blockSize,
          tokenizer: s.tokenizer,
          ...(s.chatTemplate ? { chat_template: s.chatTemplate } : {}),
          profile: o.profile,
        },
        sessions,
        records,
        await fleet.perWorker(),
        o.pricing,
        modeled ? 'modeled' : 'measured',
        wall,
      );
      out.push(policyStats ? { ...summary, policy_stats: policyStats } : summary);
    } finally {
      await fleet.close();
    }
  }
  return out;
}
