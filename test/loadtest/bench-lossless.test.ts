// `bench lossless` over the real-agent request streams (test/fixtures/agents): every call checked,
// each profile and budget its own run, nothing missing or altered, first calls unchanged; the
// exit status says whether anything was found, and bad options are refused.
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { run, type LosslessRun } from '../../loadtest/bench-lossless.ts';

const AGENTS = fileURLToPath(new URL('../fixtures/agents/', import.meta.url));

describe('bench lossless', () => {
  it('checks every call of the agent captures per profile and budget', async () => {
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      out.push(String(s));
      return true;
    });
    let rc: number;
    try {
      rc = await run(['--profile', 'novel-elision', '--budget', '0,2048', '--json', AGENTS]);
    } finally {
      spy.mockRestore();
    }
    const runs = (JSON.parse(out.join('')) as { runs: LosslessRun[] }).runs;
    expect(runs.map((r) => [r.profile, r.budget])).toEqual([
      ['novel-elision', 0],
      ['novel-elision', 2048],
    ]);
    for (const r of runs) {
      expect(r.sessions).toBe(4);
      expect(r.calls).toBe(17);
      expect({ m: r.missing, a: r.altered, f: r.first_call_changed }).toEqual({ m: 0, a: 0, f: 0 });
    }
    expect(rc).toBe(0);
  });

  it('refuses unknown profiles and budgets', async () => {
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await run(['--profile', 'nope', AGENTS])).toBe(2);
      expect(await run(['--budget', '-5', AGENTS])).toBe(2);
      expect(await run([])).toBe(2);
    } finally {
      spy.mockRestore();
    }
  });
});
