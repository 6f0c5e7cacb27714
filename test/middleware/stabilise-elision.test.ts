import { describe, expect, it } from 'vitest';
import { isElisionOf } from '../../middleware/stabilise/elision.ts';
import { stabilise, type StabiliseState } from '../../middleware/stabilise/stabilise.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import { buildSession, codeLines, elideLastN, randomSession, requestsOf, toolResult } from './helpers/session-gen.ts';

function run(reqs: ChatMessage[][], opts: Parameters<typeof stabilise>[2] = {}) {
  let st: StabiliseState | undefined;
  const outs: ChatMessage[][] = [];
  const receipts = [];
  for (const req of reqs) {
    const r = stabilise(req, st, opts);
    st = JSON.parse(JSON.stringify(r.state)) as StabiliseState;
    outs.push(r.messages);
    receipts.push(...r.receipts);
  }
  return { outs, st: st!, receipts };
}

describe('elision detection', () => {
  it('recognises markers and truncations, rejects rewrites', () => {
    const old = 'a\nb\nc\nd\ne';
    expect(isElisionOf(old, 'Old environment output: (5 lines omitted)')).toBe(true);
    expect(isElisionOf(old, 'a\nb\n... (3 lines omitted)')).toBe(true);
    expect(isElisionOf(old, '')).toBe(true);
    expect(isElisionOf(old, 'a\nX')).toBe(false);
    expect(isElisionOf(old, old + '\nf')).toBe(false);
  });
});

describe('stabilise', () => {
  it('keeps the prefix byte-identical under LastNObservations elision', () => {
    const msgs = randomSession(11, 30);
    const reqs = requestsOf(msgs).map((r) => elideLastN(r, 3));
    const { outs, receipts } = run(reqs);
    for (let k = 0; k + 1 < outs.length; k++) {
      for (let i = 0; i < outs[k].length; i++) expect(JSON.stringify(outs[k + 1][i])).toBe(JSON.stringify(outs[k][i]));
    }
    expect(receipts.filter((r) => r.action === 'defer_elision').length).toBeGreaterThan(10);
    // and what is sent equals the un-elided history
    const full = msgs.slice(0, outs[outs.length - 1].length);
    expect(JSON.stringify(outs[outs.length - 1])).toBe(JSON.stringify(full));
  });

  it('passes other edits through with a receipt', () => {
    const msgs = buildSession('t', [{ cmd: 'cat a.py', out: codeLines('a', 5) }, { cmd: 'echo', out: 'x' }]);
    const reqs = requestsOf(msgs);
    const edited = reqs[2].map((m, i) => (i === 3 ? { ...m, content: 'totally different' } : m));
    const { outs, receipts } = run([reqs[1], edited]);
    expect(outs[1][3].content).toBe('totally different');
    expect(receipts.map((r) => r.action)).toContain('edit_passed');
  });

  it('never resurrects or stores secret-looking originals; stabilise:false passes through', () => {
    const secret = 'OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    const msgs = buildSession('t', [{ cmd: 'cat .env', out: secret }, { cmd: 'echo', out: 'x' }, { cmd: 'echo', out: 'y' }]);
    const reqs = requestsOf(msgs).map((r) => elideLastN(r, 1));
    const a = run(reqs);
    expect(JSON.stringify(a.st)).not.toContain('sk-proj-');
    expect(String(a.outs[a.outs.length - 1][3].content)).toMatch(/^Old environment output/);
    const plain = buildSession('t', [{ cmd: 'cat a', out: 'a\nb\nc' }, { cmd: 'echo', out: 'x' }]);
    const b = run(requestsOf(plain).map((r) => elideLastN(r, 1)), { enabled: false });
    expect(String(b.outs[b.outs.length - 1][3].content)).toMatch(/^Old environment output/);
  });

  it('bounds stored originals', () => {
    const big = buildSession('t', Array.from({ length: 10 }, (_, k) => ({ cmd: `cat f${k}`, out: codeLines(`f${k}`, 50) })));
    const { st } = run(requestsOf(big), { maxBytes: 8000 });
    expect(st.bytes).toBeLessThanOrEqual(8000);
    expect(st.bytes).toBe(Object.values(st.orig).reduce((n, c) => n + String(c).length, 0));
    expect(toolResult('x')).toContain('<returncode>0');
  });
});
