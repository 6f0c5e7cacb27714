// The demo: an embedded fleet of reference workers and a gateway in-process, deterministic
// synthetic agent sessions, replayed passthrough (round_robin) and through ctxgate (layout +
// policy ctxgate), a printed comparison and a self-contained HTML report. Sized to finish well
// under 60 s on 2 cores (12 sessions × 20–60 calls, qwen3 tokenizer).
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { chatTemplateFor } from '../replay/chat-template.ts';
import { runComparison } from '../replay/compare.ts';
import { parseConfigSpec } from '../replay/config-spec.ts';
import { DEFAULT_PRICING } from '../replay/pricing.ts';
import { createProgress } from '../replay/progress.ts';
import type { FleetFactory, FleetSpec, RunSummary } from '../replay/types.ts';
import { generateSessions } from '../synth/index.ts';
import { renderDemoReport } from './report-html.ts';
import { formatDemoSummary } from './summary.ts';

export const DEMO_SESSIONS = 12;
export const DEMO_SEED = 42;
export const DEMO_WORKERS = 4;
export const DEMO_TOKENIZER = 'qwen3';
export const DEMO_KV_TOKENS = 262_144;
export const DEMO_CONCURRENCY = 8;
export const DEMO_REPORT = 'ctxgate-demo-report.html';
/** ctxgate's working-set budget M* in the demo: the longest synthetic sessions pass it, so compaction shows. */
export const DEMO_BUDGET = 16_384;
export const DEMO_CONFIGS = [
  'name=passthrough (round_robin),layout=passthrough,policy=round_robin',
  `name=ctxgate,layout=ctxgate,policy=ctxgate,budget=${DEMO_BUDGET}`,
];

export interface DemoOptions {
  sessions: number;
  seed: number;
  workers: number;
  tokenizer: string;
  /** Chat template file for workers and gateway; undefined = the tokenizer's default (see replay/chat-template.ts). */
  chatTemplate?: string;
  out: string | null;
  json: boolean;
  progress: boolean;
  /** Session length bounds (tests use short sessions). */
  minCalls?: number;
  maxCalls?: number;
  startFleet?: FleetFactory;
  write?: (s: string) => void;
}

export interface DemoResult {
  runs: RunSummary[];
  reportPath?: string;
  wallMs: number;
}

export async function runDemo(o: DemoOptions): Promise<DemoResult> {
  const t0 = performance.now();
  const write = o.write ?? ((s: string) => process.stdout.write(s));
  const sessions = generateSessions({ count: o.sessions, seed: o.seed, minCalls: o.minCalls, maxCalls: o.maxCalls });
  const calls = sessions.reduce((a, s) => a + s.calls.length, 0);
  if (!o.json)
    write(
      `ctxgate demo: ${sessions.length} synthetic agent sessions (${calls} calls), ${o.workers} reference workers, tokenizer ${o.tokenizer}; ctxgate with M* = ${DEMO_BUDGET.toLocaleString('en-US')} tokens\n`,
    );
  const base: FleetSpec = {
    workers: o.workers,
    flavor: 'vllm',
    kvTokens: DEMO_KV_TOKENS,
    blockSize: 16,
    tokenizer: o.tokenizer,
    chatTemplate: chatTemplateFor(o.tokenizer, o.chatTemplate),
    timeScale: 0,
    seed: o.seed,
    layout: 'ctxgate',
    policy: 'ctxgate',
    model: 'demo-agent-model',
  };
  const configs = DEMO_CONFIGS.map((c) => parseConfigSpec(c, base));
  const startFleet = o.startFleet ?? (await import('../replay/fleet.ts')).startFleet;
  const progress = createProgress(o.progress && !o.json);
  let runs: RunSummary[];
  try {
    runs = await runComparison(sessions, configs, {
      concurrency: DEMO_CONCURRENCY,
      thinkMs: 0,
      pricing: DEFAULT_PRICING,
      profile: 'synthetic (mixed)',
      startFleet,
      onRunStart: (c) => progress.start(calls, c.label),
      onCall: () => progress.tick(),
    });
  } finally {
    progress.stop();
  }
  const wallMs = performance.now() - t0;
  let reportPath: string | undefined;
  if (o.out) {
    reportPath = resolve(o.out);
    await writeFile(
      reportPath,
      renderDemoReport(runs, { sessions: sessions.length, calls, wallMs, workers: o.workers, tokenizer: o.tokenizer }),
    );
  }
  if (o.json) write(JSON.stringify({ runs, report: reportPath ?? null, wall_ms: Math.round(wallMs) }, null, 2) + '\n');
  else {
    write('\n' + formatDemoSummary(runs) + '\n');
    if (reportPath) write(`\nHTML report: ${reportPath}\n`);
    write(`Done in ${(wallMs / 1000).toFixed(1)} s.\n`);
  }
  return { runs, reportPath, wallMs };
}
