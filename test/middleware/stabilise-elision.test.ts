import { describe, expect, it } from 'vitest';
import { fingerprintOf, isElisionOf, isElisionOfFingerprint } from '../../middleware/stabilise/elision.ts';
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

/** All tool outputs but the last n replaced by a marker stabilise was never taught. */
function trimOldTools(m: ChatMessage[], n: number): ChatMessage[] {
  const tools = m.map((x, i) => (x.role === 'tool' ? i : -1)).filter((i) => i >= 0);
  const old = new Set(tools.slice(0, Math.max(0, tools.length - n)));
  return m.map((x, i) =>
    old.has(i) ? { ...x, content: `<<${String(x.content).split('\n').length} lines trimmed by harness>>` } : x,
  );
}

describe('elision detection', () => {
  it('recognises a reduction by what it keeps and adds, whatever the marker; rejects rewrites', () => {
    const old = 'alpha 1\nbeta 2\ngamma 3\ndelta 4\nepsilon 5';
    expect(isElisionOf(old, 'Old environment output: (5 lines omitted)')).toBe(true);
    expect(isElisionOf(old, 'alpha 1\nbeta 2\n... (3 lines omitted)')).toBe(true);
    expect(isElisionOf(old, '<<5 lines trimmed by harness>>')).toBe(true);
    expect(isElisionOf(old, 'alpha 1\n~~ snip ~~\nepsilon 5')).toBe(true);
    expect(isElisionOf(old, '')).toBe(true);
    // A head kept above a marker longer than what it cut is still a truncation.
    expect(
      isElisionOf('<rc>0</rc>\nfound it\n</out>\n', '<rc>0</rc>\nfound it\n<<4 lines trimmed by harness>>', {
        strictlyShorter: true,
      }),
    ).toBe(true);
    // A marker may be longer than a tiny output it replaced whole; not for user messages.
    expect(isElisionOf('ok', '[tool result cleared to save context]')).toBe(true);
    expect(isElisionOf('ok', '[tool result cleared to save context]', { strictlyShorter: true })).toBe(false);
    expect(isElisionOf(old, 'alpha 1\nX\nY\nZ\nW')).toBe(false);
    expect(isElisionOf(old, old + '\nzeta 6')).toBe(false);
    expect(isElisionOf(old, old)).toBe(false);
  });

  it('a fingerprint of the old text (kept below a compaction watermark) gives the same answers', () => {
    const tiny = '<rc>0</rc>\n<output>\nFound it\nFix applied!\n</output>';
    const long = Array.from({ length: 200 }, (_, k) => `row ${k} of the listing`).join('\n');
    const cases: [string, string, boolean][] = [
      // a head kept above a marker longer than the tiny output it cut (the novel-elision case)
      [tiny, '<rc>0</rc>\n<output>\nFound it\n<<5 lines trimmed by harness>>', true],
      [tiny, '<<5 lines trimmed by harness>>', true],
      [long, 'row 0 of the listing\nrow 1 of the listing\n(198 lines omitted)', true],
      [long, '(10 lines omitted)\nrow 198 of the listing\nrow 199 of the listing', true],
      [long, '<<200 lines trimmed by harness>>', true],
      [tiny, '<rc>0</rc>\n<output>\nFound it\nSomething else\nand more\nand more\nand more', false],
      [long, `${long}\nrow 200`, false],
    ];
    for (const [a, b, want] of cases) {
      expect(isElisionOf(a, b)).toBe(want);
      expect(isElisionOfFingerprint(fingerprintOf(a), b)).toBe(want);
    }
    // a user observation must get shorter when nothing is kept
    expect(isElisionOfFingerprint(fingerprintOf('ok'), '[cleared]', { strictlyShorter: true })).toBe(false);
    // bounded whatever the text's size
    expect(fingerprintOf(long).length).toBeLessThanOrEqual(26);
    expect(isElisionOfFingerprint(['garbage'], 'x')).toBe(false);
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
    const msgs = buildSession('t', [
      { cmd: 'cat a.py', out: codeLines('a', 5) },
      { cmd: 'echo', out: 'x' },
    ]);
    const reqs = requestsOf(msgs);
    const rewrite = 'totally different\nnew line 1\nnew line 2\nnew line 3';
    const edited = reqs[2].map((m, i) => (i === 3 ? { ...m, content: rewrite } : m));
    const { outs, receipts } = run([reqs[1], edited]);
    expect(outs[1][3].content).toBe(rewrite);
    expect(receipts.map((r) => r.action)).toContain('edit_passed');
  });

  it('never resurrects or stores secret-looking originals; stabilise:false passes through', () => {
    const secret = 'OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    const msgs = buildSession('t', [
      { cmd: 'cat .env', out: secret },
      { cmd: 'echo', out: 'x' },
      { cmd: 'echo', out: 'y' },
    ]);
    const reqs = requestsOf(msgs).map((r) => elideLastN(r, 1));
    const a = run(reqs);
    expect(JSON.stringify(a.st)).not.toContain('sk-proj-');
    expect(String(a.outs[a.outs.length - 1][3].content)).toMatch(/^Old environment output/);
    const plain = buildSession('t', [
      { cmd: 'cat a', out: 'a\nb\nc' },
      { cmd: 'echo', out: 'x' },
    ]);
    const b = run(
      requestsOf(plain).map((r) => elideLastN(r, 1)),
      { enabled: false },
    );
    expect(String(b.outs[b.outs.length - 1][3].content)).toMatch(/^Old environment output/);
  });

  it('bounds stored originals', () => {
    const big = buildSession(
      't',
      Array.from({ length: 10 }, (_, k) => ({ cmd: `cat f${k}`, out: codeLines(`f${k}`, 50) })),
    );
    const { st } = run(requestsOf(big), { maxBytes: 8000 });
    expect(st.bytes).toBeLessThanOrEqual(8000);
    expect(st.bytes).toBe(Object.values(st.orig).reduce((n, c) => n + String(c).length, 0));
    expect(toolResult('x')).toContain('<returncode>0');
  });

  it('a marker it was never taught: deferred at the same position, not when the slot moved or is the leaf', () => {
    const msgs = randomSession(5, 12);
    const reqs = requestsOf(msgs).map((r) => trimOldTools(r, 2));
    const { outs, receipts } = run(reqs);
    expect(receipts.filter((r) => r.action === 'defer_elision').length).toBeGreaterThan(5);
    expect(JSON.stringify(outs[outs.length - 1])).toBe(JSON.stringify(msgs.slice(0, outs[outs.length - 1].length)));
    // Shifted history (a condenser dropped two messages): the short text at an old index is not an elision of it.
    const base = requestsOf(msgs)[4];
    const shifted = [...base.slice(0, 2), ...base.slice(4)];
    shifted.push({ role: 'assistant', content: 'next' }, { role: 'user', content: 'ok' });
    const r = run([base, shifted]);
    expect(r.receipts.some((x) => x.action === 'defer_elision')).toBe(false);
    expect(JSON.stringify(r.outs[1])).toBe(JSON.stringify(shifted));
    // The last message edited in place (a regenerated turn) is the agent's new word.
    const leaf = base.slice();
    leaf[leaf.length - 1] = { ...leaf[leaf.length - 1], content: 'short' };
    const l = run([base, leaf]);
    expect(l.outs[1][leaf.length - 1].content).toBe('short');
  });

  it('a deferred elision the history no longer reaches leaves the stored list (review s34 F4)', () => {
    const msgs = randomSession(7, 12);
    let st: StabiliseState | undefined;
    let last: ChatMessage[] = [];
    for (const req of requestsOf(msgs).map((r) => trimOldTools(r, 2))) {
      st = JSON.parse(JSON.stringify(stabilise(req, st).state)) as StabiliseState;
      last = req;
      if (st.d.length > 0) break;
    }
    expect(st!.d.length).toBeGreaterThan(0);
    // A condenser keeps only the messages before the lowest deferred index, then a new turn: nothing
    // deferred is left, so the stored list must be empty, not the previous call's.
    const cut = [...last.slice(0, Math.min(...st!.d)), { role: 'user' as const, content: 'start over' }];
    const r = stabilise(cut, st);
    expect(r.state.d).toEqual([]);
    expect(JSON.stringify(r.messages)).toBe(JSON.stringify(cut));
  });

  it('two agents sharing a session: a slot where outputs differ is contested, never restored across agents', () => {
    const a = buildSession('t', [
      { cmd: 'cat a.py', out: codeLines('a', 8) },
      { cmd: 'echo', out: 'x' },
      { cmd: 'echo', out: 'y' },
    ]);
    const b = a.map((m, i) => (i === 3 ? { ...m, content: toolResult(codeLines('b', 8).replace(/\n/g, '\r\n')) } : m));
    const ra = requestsOf(a);
    const rb = requestsOf(b);
    const elided = ra[3].map((m, i) => (i === 3 ? { ...m, content: 'Old environment output: (10 lines omitted)' } : m));
    const { outs } = run([ra[2], rb[2], elided]);
    expect(outs[2][3].content).toBe('Old environment output: (10 lines omitted)');
  });
});
