// `bench replay` run in this process with its output kept, and the synthetic sessions the
// replay tests write as request streams.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatRequestLine } from '../../loadtest/formats/request-stream.ts';
import { type ReplayDeps, replayCommand } from '../../loadtest/replay/command.ts';
import { generateSessions, type SynthOptions } from '../../loadtest/synth/index.ts';

/** The keys every run of `bench replay --json` carries (the README documents them). */
export const RUN_SUMMARY_KEYS = [
  'config',
  'requests',
  'sessions',
  'prompt_tokens',
  'cached_tokens',
  'hit_rate',
  'prefill_tokens',
  'cost_usd',
  'input_cost_usd',
  'ttft_ms',
  'imbalance',
  'per_worker',
  'per_session',
  'errors',
] as const;

/** Runs `ctxgate bench replay ARGV`; its exit code, stdout and stderr. */
export async function runReplay(
  argv: string[],
  deps: Omit<ReplayDeps, 'out' | 'err'> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await replayCommand(argv, { ...deps, out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

/** Synthetic sessions (loadtest/synth) written to `dir`, one request stream per session. */
export function writeSynthSessions(dir: string, o: SynthOptions): void {
  for (const s of generateSessions(o))
    writeFileSync(
      join(dir, `${s.id}.jsonl`),
      s.calls.map((c, turn) => formatRequestLine(c.body, { session: s.id, turn })).join(''),
    );
}
