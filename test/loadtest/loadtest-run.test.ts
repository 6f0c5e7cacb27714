import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { until } from '../helpers/gateway.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';
import { runLoad, type LoadOptions } from '../../loadtest/load/driver.ts';
import { run } from '../../cli/commands/loadtest.ts';
import { summariseLoad } from '../../loadtest/load/summary.ts';
import { startFakeUpstream, type FakeUpstream } from '../../loadtest/fake-upstream.ts';
import { startFleet } from '../../loadtest/replay/fleet.ts';
import { generateSessions } from '../../loadtest/synth/index.ts';
import type { ChatMessage } from '../../middleware/types.ts';

const sessions = generateSessions({ count: 3, seed: 7, minCalls: 4, maxCalls: 6, volatileEvery: 0, elisionEvery: 0 });
const calls = new Map(sessions.map((s) => [s.id, s.calls.length]));
const ups: FakeUpstream[] = [];
const tempDir = useTempDirs();
afterEach(async () => {
  for (const u of ups.splice(0)) await u.close();
  vi.restoreAllMocks();
});

async function fake(knobs: Parameters<typeof startFakeUpstream>[0] = {}): Promise<FakeUpstream> {
  const u = await startFakeUpstream({ record: true, ...knobs });
  ups.push(u);
  return u;
}

const base = (target: string): LoadOptions => ({
  target,
  api: 'chat',
  model: 'm',
  sessions,
  connections: 1,
  durationS: 30,
  rate: 0,
  thinkMs: 0,
  stream: false,
  maxTokens: 32,
  timeoutS: 10,
});

async function captureStdout(fn: () => Promise<number>): Promise<{ rc: number; out: string }> {
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    out += String(s);
    return true;
  });
  const rc = await fn();
  vi.restoreAllMocks();
  return { rc, out };
}

describe('ctxgate loadtest against live targets', () => {
  it('each next body extends the last with the answer the target returned', async () => {
    const up = await fake({ knobs: { words: 3 } });
    const r = await runLoad({ ...base(up.url), requests: 4, stream: true });
    expect(r.samples).toHaveLength(4);
    expect(r.samples.every((s) => s.ok)).toBe(true);
    const bodies = up.requests as { messages: ChatMessage[] }[];
    expect(bodies).toHaveLength(4);
    // the fake answers every tool-offering request with tool call call_1: turn k+1 carries it in place
    for (let k = 1; k < 4; k++) {
      const prev = bodies[k - 1].messages;
      const cur = bodies[k].messages;
      expect(cur.slice(0, prev.length)).toEqual(prev);
      expect(cur[prev.length]).toMatchObject({
        role: 'assistant',
        tool_calls: [{ id: 'call_1', function: { arguments: '{"path":"a.txt"}' } }],
      });
      expect(cur[prev.length + 1]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    }
    for (const s of r.samples) expect(s.ttft_ms).toBeGreaterThan(0);
  });

  it('--compare sends identical traffic to both targets and prints ratios', async () => {
    const a = await fake({ name: 'a' });
    const b = await fake({ name: 'b' });
    const html = join(tempDir('loadtest-'), 'r.html');
    const { rc, out } = await captureStdout(() =>
      run([
        '--target',
        a.url,
        '--compare',
        b.url,
        '--model',
        'm',
        '--requests',
        '5',
        '--connections',
        '1',
        '--sessions',
        '2',
        '--json',
        '--out',
        html,
      ]),
    );
    expect(rc).toBe(0);
    const j = JSON.parse(out);
    expect(j.runs.map((x: { target: string }) => x.target)).toEqual([a.url, b.url]);
    expect(j.runs[0].requests).toBe(5);
    expect(j.runs[1].requests).toBe(5);
    expect(Object.keys(j.ratios)).toEqual(expect.arrayContaining(['rps', 'latency_p50', 'hit_rate']));
    expect(a.requests).toEqual(b.requests);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain(a.url);
    expect(page).toContain(b.url);
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it('counts errors by status', async () => {
    const up = await fake({ knobs: { status: 429 } });
    const r = await runLoad({ ...base(up.url), requests: 3 });
    const s = summariseLoad(r, { target: up.url, api: 'chat', stream: false, callsPerSession: calls });
    expect(s.errors).toEqual({ '429': 3 });
    expect(s.ok).toBe(0);
    expect(s.error_samples[0]).toContain('status 429');
  });

  it('a target that goes down mid-run is reported, not a crash', async () => {
    const up = await fake({ knobs: { chunkDelayMs: 5 } });
    // No wall-clock window a loaded machine could spend starting the run: the run lasts until it
    // is stopped; the target goes down once a request has completed (a third one started on 2
    // connections), and the run is stopped once a failed call was counted.
    const stop = new AbortController();
    let failed = 0;
    const onSample = (x: { ok: boolean }) => void (x.ok || failed++);
    const opts = { ...base(up.url), durationS: 600, connections: 2, stream: true, timeoutS: 2, onSample };
    const pending = runLoad(opts, stop.signal);
    await until(() => up.received >= 3, 60_000);
    await up.close();
    ups.splice(ups.indexOf(up), 1);
    await until(() => failed > 0, 60_000);
    stop.abort();
    const r = await pending;
    const s = summariseLoad(r, { target: up.url, api: 'chat', stream: true, callsPerSession: calls });
    expect(s.ok).toBeGreaterThan(0);
    expect(s.requests - s.ok).toBeGreaterThan(0);
    expect(Object.keys(s.errors).some((k) => k === 'conn_error' || k === 'timeout' || /^5\d\d$/.test(k))).toBe(true);
  });

  it("through ctxgate and reference workers: hit rate equals the gateway's own counters, predictions reported", async () => {
    const fleet = await startFleet({
      workers: 2,
      flavor: 'vllm',
      kvTokens: 200_000,
      blockSize: 16,
      tokenizer: 'qwen3',
      timeScale: 0,
      seed: 1,
      layout: 'ctxgate',
      policy: 'ctxgate',
      model: 'qwen3',
    });
    try {
      const r = await runLoad({ ...base(fleet.url), model: 'qwen3', connections: 2, requests: 10 });
      const s = summariseLoad(r, { target: fleet.url, api: 'chat', stream: false, callsPerSession: calls });
      expect(s.ok).toBe(10);
      expect(s.hit_rate).toBeGreaterThan(0.3);
      expect(s.predicted_cached_tokens).toBeGreaterThan(0);
      // the same traffic over the Anthropic and Responses ingresses, streamed: usage read back in each API's shape
      let prompt = s.prompt_tokens;
      let cached = s.cached_tokens;
      for (const api of ['anthropic', 'responses'] as const) {
        const x = summariseLoad(await runLoad({ ...base(fleet.url), api, model: 'qwen3', stream: true, requests: 4 }), {
          target: fleet.url,
          api,
          stream: true,
          callsPerSession: calls,
        });
        expect(x.ok).toBe(4);
        expect(x.cached_tokens).toBeGreaterThan(0);
        prompt += x.prompt_tokens;
        cached += x.cached_tokens;
      }
      const metrics = await (await fetch(`${fleet.url}/metrics`)).text();
      const total = (name: string) => {
        let sum = 0;
        for (const m of metrics.matchAll(new RegExp(`^ctxgate_${name}_total\\{[^}]*\\} (\\d+)`, 'gm')))
          sum += Number(m[1]);
        return sum;
      };
      expect(total('prompt_tokens')).toBe(prompt);
      expect(total('cached_tokens')).toBe(cached);
    } finally {
      await fleet.close();
    }
  });
});
