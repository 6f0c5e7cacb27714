import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatRequestLine } from '../../loadtest/formats/request-stream.ts';
import { replayCommand } from '../../loadtest/replay/command.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { parseConfigSpec } from '../../loadtest/replay/config-spec.ts';
import { gatewayConfigFor } from '../../loadtest/replay/fleet.ts';
import { percentiles } from '../../loadtest/replay/metrics.ts';
import type { FleetSpec, RunSummary } from '../../loadtest/replay/types.ts';
import { standinFleet, type StandinLog } from './replay-standin-fleet.ts';
import { RUN_SUMMARY_KEYS, runReplay } from '../helpers/replay.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();

function writeSessions(dir: string, n: number, turns: number): void {
  for (let s = 0; s < n; s++) {
    const msgs: { role: string; content: string }[] = [
      { role: 'system', content: 'You are a careful coding agent. '.repeat(20) },
      { role: 'user', content: `task ${s}` },
    ];
    let text = '';
    for (let t = 0; t < turns; t++) {
      text += formatRequestLine(
        { model: 'orig-model', messages: msgs.slice() },
        { session: `s${s}`, turn: t, recorded_usage: { prompt_tokens: 100, cached_tokens: 90, completion_tokens: 5 } },
      );
      msgs.push({ role: 'assistant', content: `step ${t}` }, { role: 'user', content: `output ${t} `.repeat(30) });
    }
    writeFileSync(join(dir, `s${s}.jsonl`), text);
  }
}

describe('bench replay (stand-in fleet)', () => {
  it('--compare runs each configuration over identical traffic, in order, with documented JSON keys', async () => {
    const dir = tempDir('replay-');
    writeSessions(dir, 3, 5);
    const log: StandinLog = { specs: [], bodies: [] };
    const { code, out: stdout } = await runReplay(
      [
        dir,
        '--workers',
        '2',
        '--json',
        '--compare',
        'layout=passthrough,policy=round_robin',
        'layout=ctxgate,policy=ctxgate,budget=4000',
      ],
      { startFleet: standinFleet(log) },
    );
    expect(code).toBe(0);
    const { runs } = JSON.parse(stdout) as { runs: RunSummary[] };
    expect(runs.map((r) => [r.config.layout, r.config.policy, r.config.budget])).toEqual([
      ['passthrough', 'round_robin', undefined],
      ['ctxgate', 'ctxgate', 4000],
    ]);
    expect(log.specs.map((s) => s.workers)).toEqual([2, 2]);
    // same traffic (as a multiset: sessions interleave differently) reached both fleets
    expect(log.bodies[0].length).toBe(15);
    expect([...log.bodies[0]].sort()).toEqual([...log.bodies[1]].sort());
    for (const b of log.bodies[0]) expect(JSON.parse(b).model).toBe('replay-model');
    for (const r of runs) {
      for (const k of RUN_SUMMARY_KEYS) expect(r).toHaveProperty(k);
      expect(r.requests).toBe(15);
      expect(r.sessions).toBe(3);
      expect(r.prefill_tokens).toBe(r.prompt_tokens - r.cached_tokens);
      expect(r.cached_tokens).toBeGreaterThan(0);
      expect(r.hit_rate).toBeCloseTo(r.cached_tokens / r.prompt_tokens, 3);
      expect(r.per_worker.reduce((a, w) => a + w.requests, 0)).toBe(15);
      expect(r.imbalance).toBeGreaterThanOrEqual(1);
      expect(r.per_session.map((p) => p.session)).toEqual(['s0', 's1', 's2']);
      expect(r.per_session[0].recorded_hit_rate).toBeCloseTo(0.9, 5);
      expect(r.ttft_source).toBe('modeled');
      expect(r.ttft_ms.p50).toBeGreaterThan(0);
      expect(r.cost_usd).toBeCloseTo(
        ((r.prompt_tokens - r.cached_tokens) * 1 + r.cached_tokens * 0.1 + r.completion_tokens * 4) / 1e6,
        6,
      );
      expect(r.input_cost_usd).toBeCloseTo(((r.prompt_tokens - r.cached_tokens) * 1 + r.cached_tokens * 0.1) / 1e6, 6);
    }
  });

  it('prints a side-by-side table with ratios to the first configuration', async () => {
    const dir = tempDir('replay-');
    writeSessions(dir, 2, 3);
    const { code, out: stdout } = await runReplay(
      [dir, '--workers', '1', '--compare', 'name=A,layout=passthrough', 'name=B,policy=least_load'],
      { startFleet: standinFleet({ specs: [], bodies: [] }) },
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\s+A\s+B$/m);
    expect(stdout).toMatch(/prefill tokens .*\(×1\.00\)/);
    expect(stdout).toContain('ratios (×) are to the first column');
  });

  it('rejects bad options', async () => {
    let e = '';
    expect(await replayCommand(['x', '--bogus', '1'], { err: (s) => (e += s) })).toBe(2);
    expect(e).toContain('unknown option --bogus');
    expect(() => parseConfigSpec('layout=weird', {} as FleetSpec)).toThrow(/layout/);
  });

  it('policy.NAME keys become policy_options (numbers and booleans parsed) and reach the gateway config', () => {
    const base = { layout: 'passthrough', policy: 'round_robin', policyOptions: { keep: 'x' } } as unknown as FleetSpec;
    const c = parseConfigSpec(
      'layout=ctxgate,policy=ctxgate,policy.sticky_slack=0,policy.use-feedback=false,policy.mode=fast',
      base,
    );
    expect(c.spec.policyOptions).toEqual({ keep: 'x', sticky_slack: 0, use_feedback: false, mode: 'fast' });
    expect(base.policyOptions).toEqual({ keep: 'x' }); // the base spec is not mutated
    expect(c.label).toBe('ctxgate/ctxgate(keep=x,sticky_slack=0,use_feedback=false,mode=fast)');
    expect(() => parseConfigSpec('policy.=1', base)).toThrow(/policy\.NAME/);
    const spec = {
      ...c.spec,
      model: 'm',
      tokenizer: 'qwen3',
      flavor: 'vllm',
      blockSize: 16,
      kvTokens: 1000,
    } as FleetSpec;
    // Options the policy does not have are rejected at load, naming the field.
    expect(() => parseConfig(gatewayConfigFor(spec, ['http://127.0.0.1:1']), 't')).toThrow(
      /models\[0\]\.policy_options\.keep: not an option of policy 'ctxgate'/,
    );
    const known = { ...spec, policyOptions: { sticky_slack: 0, kv_pressure_s: 50 } };
    const parsed = parseConfig(gatewayConfigFor(known, ['http://127.0.0.1:1']), 't');
    expect(parsed.models[0].policy_options).toEqual({ sticky_slack: 0, kv_pressure_s: 50 });
    const plain = parseConfig(gatewayConfigFor({ ...spec, policyOptions: undefined }, ['http://127.0.0.1:1']), 't');
    expect(plain.models[0].policy_options).toEqual({});
  });

  it('nearest-rank percentiles', () => {
    expect(percentiles([5, 1, 3, 2, 4])).toEqual({ p50: 3, p95: 5, p99: 5 });
    expect(percentiles([])).toEqual({ p50: 0, p95: 0, p99: 0 });
  });
});
