// End to end: 2 reference workers behind a real gateway, 2 short synthetic sessions.
import { describe, expect, it } from 'vitest';
import { startFleet } from '../../loadtest/replay/fleet.ts';
import type { FleetFactory, RunSummary } from '../../loadtest/replay/types.ts';
import { RUN_SUMMARY_KEYS, runReplay, writeSynthSessions } from '../helpers/replay.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();

/** `bench replay` over 2 synthetic sessions (seed, calls per session) with `--workers 2 --json ARGS`: its parsed
 * output, after checking it exited 0 with nothing on stderr. */
async function replayJson(seed: number, calls: [number, number], args: string[]): Promise<unknown> {
  const dir = tempDir('replay-e2e-');
  writeSynthSessions(dir, {
    count: 2,
    seed,
    minCalls: calls[0],
    maxCalls: calls[1],
    volatileEvery: 0,
    elisionEvery: 0,
  });
  const { code, out, err } = await runReplay([dir, '--workers', '2', '--json', ...args]);
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out);
}

describe('bench replay end to end (reference workers + gateway)', () => {
  it('--compare --json over 2 workers and 2 synthetic sessions', async () => {
    const { runs } = (await replayJson(
      3,
      [6, 8],
      ['--compare', 'layout=passthrough,policy=round_robin', 'layout=passthrough,policy=least_load'],
    )) as { runs: RunSummary[] };
    expect(runs.map((r) => r.config.policy)).toEqual(['round_robin', 'least_load']);
    for (const r of runs) {
      for (const k of RUN_SUMMARY_KEYS) expect(r).toHaveProperty(k);
      expect(r.errors).toBe(0);
      expect(r.sessions).toBe(2);
      expect(r.requests).toBeGreaterThanOrEqual(12);
      expect(r.per_worker).toHaveLength(2);
      expect(r.per_worker.reduce((a, w) => a + w.requests, 0)).toBe(r.requests);
      expect(r.prompt_tokens).toBeGreaterThan(r.requests * 500);
      expect(r.cached_tokens).toBeGreaterThan(0);
      expect(r.prefill_tokens).toBe(r.prompt_tokens - r.cached_tokens);
      expect(r.ttft_ms.p50).toBeGreaterThan(0);
    }
    // identical traffic: the same prompts were tokenised in both runs
    expect(runs[1].prompt_tokens).toBe(runs[0].prompt_tokens);
  });

  it('a spec with policy options runs, and --json carries the gateway policy_stats', async () => {
    const r = (await replayJson(
      5,
      [4, 5],
      ['--compare', 'layout=ctxgate,policy=ctxgate,policy.sticky_slack=0'],
    )) as RunSummary;
    expect(r.errors).toBe(0);
    expect(r.config.policy_options).toEqual({ sticky_slack: 0 });
    const stats = r.policy_stats as { sessions: number; branches: Record<string, number> };
    expect(stats.sessions).toBe(2);
    // every routed request went through exactly one branch of the ctxgate policy
    expect(Object.values(stats.branches).reduce((a, b) => a + b, 0)).toBe(r.requests);
  });

  it('--json carries the lossless check of every call: 0/0/0 through ctxgate, and a dropped line is counted', async () => {
    const dir = tempDir('replay-lossless-');
    writeSynthSessions(dir, { count: 2, seed: 9, minCalls: 5, maxCalls: 6, volatileEvery: 1, elisionEvery: 1 });
    const run = async (startFleet?: FleetFactory): Promise<RunSummary> => {
      const { code, out } = await runReplay([dir, '--workers', '2', '--json', '--budget', '4096'], { startFleet });
      expect(code).toBe(0);
      return JSON.parse(out) as RunSummary;
    };
    const r = await run();
    expect(r.lossless).toMatchObject({ missing: 0, altered: 0, first_call_changed: 0, checked: r.requests });
    // The same run with one upstream line dropped from every call's last message: the check sees it.
    const lossy: FleetFactory = async (spec) => {
      const f = await startFleet(spec);
      return {
        ...f,
        takeExchange: (id) => {
          const ex = f.takeExchange!(id);
          if (!ex) return ex;
          const msgs = ex.upstream.messages.slice();
          const last = msgs[msgs.length - 1];
          msgs[msgs.length - 1] = { ...last, content: String(last.content).split('\n').slice(1).join('\n') };
          return { ...ex, upstream: { ...ex.upstream, messages: msgs } };
        },
      };
    };
    const bad = await run(lossy);
    expect(bad.lossless!.missing).toBeGreaterThanOrEqual(bad.requests);
    expect(bad.lossless!.first_call_changed).toBe(2);
    expect(bad.lossless!.samples.length).toBeGreaterThan(0);
  });
});
