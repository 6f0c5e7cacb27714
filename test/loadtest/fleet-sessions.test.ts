// `bench fleet` on agent sessions: the gateway's capture files and the replay formats (attributed
// excerpts under test/fixtures/trajectories, and capture output written here by the gateway's own
// capture), rendered and tokenised, hashed in chained blocks, replayed closed loop: sessions start
// as a seeded Poisson process and each call waits for the previous answer plus the think time.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCapture } from '../../gateway/capture/index.ts';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { fleetPolicyOptions, run } from '../../loadtest/fleet/command.ts';
import { simulateFleet } from '../../loadtest/fleet/simulator.ts';
import { callRequest, poissonStarts, sessionRequests } from '../../loadtest/fleet/sessions.ts';
import { ChainInterner } from '../../loadtest/fleet/trace.ts';
import type { Session } from '../../loadtest/formats/types.ts';
import { loadWorkerTokenizer } from '../../loadtest/sim-worker/tokenize.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';
import { FIXTURE_TRAJECTORIES } from '../fixtures/trajectories.ts';
import { captureOutput } from '../helpers/capture-output.ts';

const timing = PRESETS['qwen3-32b-h200'];
const BLOCK = 64;

/** An append-only agent conversation: turn k repeats every earlier message and adds two. */
function session(id: string, turns: number): Session {
  const messages: Array<{ role: string; content: string }> = [
    { role: 'system', content: `You are agent ${id}. `.repeat(40) },
  ];
  const calls = [];
  for (let k = 0; k < turns; k++) {
    messages.push({ role: 'user', content: `Step ${k}: run the tests of module_${k}.py and report. `.repeat(6) });
    calls.push({
      body: { model: 'm', messages: messages.map((m) => ({ ...m })) } as never,
      recordedUsage: { prompt_tokens: 0, cached_tokens: 0, completion_tokens: 30 + k },
    });
    messages.push({ role: 'assistant', content: `Ran module_${k}.py: 3 passed.` });
  }
  return { id, source: `gen:${id}`, calls };
}

const opts = { tokenizer: 'qwen3', blockTokens: BLOCK, ratePerS: 2, seed: 7, thinkMs: 1500, defaultOutputTokens: 100 };

describe('session inputs', () => {
  it('a call is its rendered prompt’s token ids in chained blocks; later calls extend earlier ones', async () => {
    const tok = await loadWorkerTokenizer('qwen3');
    const s = session('a', 3);
    const chain = new ChainInterner();
    const reqs = [0, 1, 2].map((k) => callRequest(tok, s, k, chain, opts));
    const ids = tok.encodeCached(tok.renderChat(s.calls[1].body.messages as never));
    expect(reqs[1].inputTokens).toBe(ids.length);
    expect(reqs[1].keys.length).toBe(blockHashes(ids, BLOCK).length);
    expect(reqs[1].outputTokens).toBe(31); // recorded usage
    // append-only history: every full block of call k is a block of call k+1 at the same place
    for (let k = 0; k < 2; k++) {
      expect(reqs[k].keys.length).toBeGreaterThan(2);
      const shared = [...reqs[k].keys].filter((key, b) => reqs[k + 1].keys[b] === key).length;
      // (the last block may hold the generation prompt, which the next call replaces by the answer)
      expect(reqs[k + 1].keys.slice(0, shared)).toEqual(reqs[k].keys.slice(0, shared));
      expect(shared).toBeGreaterThanOrEqual(reqs[k].keys.length - 1);
    }
    // another session shares nothing past what the two prompts really share
    const other = callRequest(tok, session('b', 1), 0, chain, opts);
    expect(other.keys[0]).not.toBe(reqs[0].keys[0]);
  });

  it('Poisson starts: seeded, mean gap 1/rate', () => {
    const a = poissonStarts(4000, 2, 11);
    expect(poissonStarts(4000, 2, 11)).toEqual(a);
    expect(poissonStarts(10, 2, 12)).not.toEqual(a.slice(0, 10));
    const mean = a[a.length - 1] / a.length;
    expect(mean).toBeGreaterThan(450);
    expect(mean).toBeLessThan(550);
    expect(() => poissonStarts(1, 0, 1)).toThrow(/--rate/);
  });

  it('closed loop: each call comes think_ms after the previous answer, starts equal for every policy', async () => {
    const sessions = ['a', 'b', 'c', 'd', 'e', 'f'].map((id, i) => session(id, 4 + (i % 3)));
    const reqs = await sessionRequests(sessions, new ChainInterner(), opts);
    expect(reqs.length).toBe(sessions.reduce((n, s) => n + s.calls.length, 0));
    const firsts = reqs.filter((r) => r.after === undefined).map((r) => r.arrivalMs);
    for (const policy of ['round_robin', 'ctxgate']) {
      const res = simulateFleet(reqs, {
        policy,
        policyOptions: fleetPolicyOptions(policy, timing, BLOCK, 20_000, 1),
        workers: 2,
        kvTokens: 20_000,
        blockSize: BLOCK,
        timing,
      });
      expect(res.duplicateFinishes).toBe(0);
      expect(res.outcomes.length).toBe(reqs.length);
      const byId = new Map(res.outcomes.map((o) => [o.id, o]));
      for (const r of reqs) {
        const o = byId.get(r.id)!;
        if (r.after === undefined) expect(o.arrivalMs).toBe(r.arrivalMs);
        else expect(o.arrivalMs).toBeCloseTo(byId.get(r.after)!.finishMs + 1500, 6);
      }
      expect(
        res.outcomes
          .filter((o) => reqs[o.id].after === undefined)
          .map((o) => o.arrivalMs)
          .sort((x, y) => x - y),
      ).toEqual([...firsts].sort((x, y) => x - y));
      // a session's later calls find its history cached somewhere
      const later = res.outcomes.filter((o) => reqs[o.id].after !== undefined);
      expect(later.reduce((n, o) => n + o.cachedTokens, 0)).toBeGreaterThan(0);
    }
  });
});

describe('bench fleet on sessions (CLI)', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ctxgate-fleet-capture-'));
    // the gateway's own capture writes the files
    const cap = createCapture({ dir, sampleRate: 1, maxBytes: 10_000_000 });
    for (const id of ['s1', 's2', 's3'])
      for (const c of session(id, 3).calls) cap.record('acme', id, c.body, { recorded_usage: c.recordedUsage });
    await cap.close();
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const capture = (args: string[]) => captureOutput(() => run(args));

  it('reads capture output: every call of every session completes under each policy', async () => {
    // the capture file is request-stream JSONL with _meta (session, turn, time): one session per file
    const { rc, out, err } = await capture([
      dir,
      '--workers',
      '2',
      '--block-size',
      '64',
      '--policies',
      'round_robin,ctxgate',
      '--json',
    ]);
    expect(err).toBe('');
    expect(rc).toBe(0);
    const runs = (JSON.parse(out) as { runs: Array<{ requests: number; completed: number; hit_rate: number }> }).runs;
    expect(runs.map((r) => [r.requests, r.completed])).toEqual([
      [9, 9],
      [9, 9],
    ]);
    expect(runs[1].hit_rate).toBeGreaterThan(0);
  });

  it('reads the replay formats (mini-swe-agent, SWE-agent, aider excerpts)', async () => {
    const { rc, out } = await capture([FIXTURE_TRAJECTORIES, '--policies', 'ctxgate', '--rate', '0.2']);
    expect(rc).toBe(0);
    // 2 mini-swe-agent + 1 SWE-agent + 1 aider recording
    expect(out).toMatch(/in 4 sessions \(closed loop, tokenizer qwen3\)/);
    // a closed loop's arrival times depend on the router: no FCFS fluid figures over them
    expect(out).toMatch(/no fluid figures for agent sessions/);
    expect(out).not.toMatch(/p90 TTFT >=/);
  });

  it('refuses mixed inputs and session options on a Mooncake trace, naming them', async () => {
    const { writeFile } = await import('node:fs/promises');
    const mc = join(dir, 'trace.jsonl');
    await writeFile(mc, '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n');
    const mixed = await capture([mc, join(dir, 'acme'), '--policies', 'round_robin']);
    expect(mixed.rc).toBe(2);
    expect(mixed.err).toMatch(/Mooncake traces or agent sessions, not both/);
    const rate = await capture([mc, '--rate', '2', '--policies', 'round_robin']);
    expect(rate.rc).toBe(2);
    expect(rate.err).toMatch(/--rate applies to agent sessions/);
    await rm(mc);
  });
});
