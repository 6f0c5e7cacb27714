import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../loadtest/demo/run-demo.ts';
import { useTempDirs } from '../helpers/temp-dirs.ts';

const tempDir = useTempDirs();

describe('ctxgate demo', () => {
  it('replays synthetic sessions passthrough and through ctxgate, prints the comparison, writes a self-contained report', async () => {
    const out = join(tempDir('demo-'), 'report.html');
    let text = '';
    const r = await runDemo({
      sessions: 2,
      seed: 42,
      workers: 2,
      tokenizer: 'qwen3',
      out,
      json: false,
      progress: false,
      minCalls: 8,
      maxCalls: 10,
      write: (s) => (text += s),
    });
    expect(r.runs.map((x) => [x.config.layout, x.config.policy])).toEqual([
      ['passthrough', 'round_robin'],
      ['ctxgate', 'ctxgate'],
    ]);
    for (const x of r.runs) expect(x.errors).toBe(0);
    expect(r.runs[0].requests).toBe(r.runs[1].requests);
    // session 1 carries a volatile clock at the top of its system prompt: ctxgate moves it out of the prefix
    expect(r.runs[1].prefill_tokens).toBeLessThan(r.runs[0].prefill_tokens);
    expect(r.runs[1].per_session[1].hit_rate).toBeGreaterThan(r.runs[0].per_session[1].hit_rate);
    expect(text).toMatch(/hit rate .* → /);
    expect(text).toContain('not a real GPU');
    expect(text).toContain(`HTML report: ${out}`);
    const html = readFileSync(out, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('<svg');
    expect(html).toContain('simulator');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/); // self-contained
  });
});
