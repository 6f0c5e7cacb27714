// bench fleet's command line as the routing issue specifies it: every option it names is accepted
// and acts (--block-size, --preset, --rate-scale, --policies, --index, --duration-s, --seed), the
// --json run has the documented keys with consistent values, and the progress bar appears on a
// real terminal (a pty from util-linux `script`) and never on a pipe or with --json.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../loadtest/fleet/command.ts';
import type { FleetRunSummary } from '../../loadtest/fleet/summary.ts';
import { captureOutput } from '../helpers/capture-output.ts';
import { steppedConversationJsonl } from '../helpers/fleet-conversations.ts';

const BIN = new URL('../../bin/ctxgate.js', import.meta.url).pathname;
const REQUESTS = 60;

let dir = '';
let trace = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleet-shape-'));
  trace = join(dir, 'trace.jsonl');
  await writeFile(trace, steppedConversationJsonl(REQUESTS));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const capture = (args: string[]) => captureOutput(() => run(args));
const ORDERED = (p: { p50: number; p90: number; p95: number; p99: number }) =>
  p.p50 <= p.p90 && p.p90 <= p.p95 && p.p95 <= p.p99;

describe('bench fleet --json: the documented shape', () => {
  const args = [
    '--workers',
    '2',
    '--kv-tokens',
    '20000',
    '--block-size',
    '256',
    '--preset',
    'qwen3-32b-h200',
    '--policies',
    'round_robin,llmd_precise,ctxgate',
    '--index',
    'precise',
    '--seed',
    '3',
  ];

  it('has every key the issue names, per run, with values that agree with each other', async () => {
    // ×2 compresses the 400 ms gaps to 200 ms; 9.9 s keeps arrivals 0..49 (50 requests)
    const { rc, out, err } = await capture([trace, ...args, '--rate-scale', '2', '--duration-s', '9.9', '--json']);
    expect(err).toBe('');
    expect(rc).toBe(0);
    const j = JSON.parse(out) as { runs: FleetRunSummary[] };
    expect(j.runs.map((r) => r.config.policy)).toEqual(['round_robin', 'llmd_precise', 'ctxgate']);
    for (const r of j.runs) {
      expect(r.config).toMatchObject({
        workers: 2,
        kv_tokens: 20000,
        block_size: 256,
        preset: 'qwen3-32b-h200',
        rate_scale: 2,
        index: 'precise',
      });
      expect(r.requests).toBe(50);
      expect(r.completed).toBe(50);
      expect(r.hit_rate).toBeGreaterThanOrEqual(0);
      expect(r.hit_rate).toBeLessThan(1);
      expect(Number.isInteger(r.prefill_tokens)).toBe(true);
      for (const p of [r.ttft_ms, r.e2e_ms, r.queue_wait_ms]) {
        expect(Object.keys(p).sort()).toEqual(['p50', 'p90', 'p95', 'p99']);
        expect(ORDERED(p)).toBe(true);
      }
      // a request is queued, then gets its first token, then finishes
      expect(r.queue_wait_ms.p50).toBeLessThanOrEqual(r.ttft_ms.p50);
      expect(r.ttft_ms.p99).toBeLessThanOrEqual(r.e2e_ms.p99);
      expect(r.throughput_tok_s).toBeGreaterThan(0);
      expect(r.imbalance).toBeGreaterThanOrEqual(1);
      expect(Number.isInteger(r.preemptions)).toBe(true);
    }
    // prefill_tokens counts what was computed: the 50 prompts less what the cache served
    const prompts = Array.from({ length: 50 }, (_, i) => 512 * (1 + 2 * (1 + Math.floor(i / 20))));
    const total = prompts.reduce((a, b) => a + b, 0);
    for (const r of j.runs) expect(r.prefill_tokens).toBeCloseTo(total * (1 - r.hit_rate), -1);
  });

  it('--seed and identical inputs give identical runs; --block-size re-cuts the cache', async () => {
    const strip = (r: FleetRunSummary) => ({ ...r, wall_s: 0 });
    const a = JSON.parse((await capture([trace, ...args, '--json'])).out) as { runs: FleetRunSummary[] };
    const b = JSON.parse((await capture([trace, ...args, '--json'])).out) as { runs: FleetRunSummary[] };
    expect(a.runs.map(strip)).toEqual(b.runs.map(strip));
    const whole = args.map((v, i) => (args[i - 1] === '--block-size' ? '512' : v));
    const c = JSON.parse((await capture([trace, ...whole, '--json'])).out) as { runs: FleetRunSummary[] };
    expect(c.runs.every((r) => r.config.block_size === 512)).toBe(true);
    expect(c.runs.map((r) => r.completed)).toEqual(a.runs.map((r) => r.completed));
  });
});

/** Runs `ctxgate ARGS` as a child: on a pty (stdout and stderr one stream) or on pipes. */
function child(args: string[], tty: boolean): Promise<{ code: number | null; out: string; err: string }> {
  const argv = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const p = tty
    ? spawn('script', ['-qec', argv, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, out, err }));
  });
}

describe('bench fleet progress bar', () => {
  const args = () => [
    'bench',
    'fleet',
    trace,
    '--workers',
    '2',
    '--kv-tokens',
    '20000',
    '--policies',
    'round_robin,ctxgate',
  ];

  it('on a terminal: one bar per policy, counting every request', async () => {
    const r = await child(args(), true);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`round_robin \\|[^|]*\\| ${REQUESTS}/${REQUESTS} calls`));
    expect(r.out).toMatch(new RegExp(`ctxgate \\|[^|]*\\| ${REQUESTS}/${REQUESTS} calls`));
    // and the table still follows
    expect(r.out).toMatch(/^round_robin\s/m);
  }, 120_000);

  it('on a pipe, and with --json on a terminal: no bar', async () => {
    const piped = await child(args(), false);
    expect(piped.code).toBe(0);
    expect(piped.err).not.toMatch(/calls/);
    expect(piped.out).not.toMatch(/\d+\/\d+ calls/);
    const json = await child([...args(), '--json'], true);
    expect(json.code).toBe(0);
    expect(json.out).not.toMatch(/\d+\/\d+ calls/);
    expect((JSON.parse(json.out.slice(json.out.indexOf('{'))) as { runs: unknown[] }).runs).toHaveLength(2);
  }, 120_000);
});
