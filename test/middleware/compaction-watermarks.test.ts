import { describe, expect, it } from 'vitest';
import { runPureChain, type PureChainState } from './helpers/pure-chain.ts';
import { approxTokens, messageText, messageTokens } from '../../middleware/ledger/message-text.ts';
import { MemoryArtifactStore } from '../../middleware/artifacts/store.ts';
import type { ChatMessage, Receipt } from '../../middleware/types.ts';
import { BEST_EFFORT_FROM, compactMessages, DEFAULT_HIGH } from '../../middleware/compaction/compact.ts';
import { buildSession, codeLines, elideLastN, requestsOf, type Step } from './helpers/session-gen.ts';

const M = 3000;
const tokens = (ms: ChatMessage[]) => ms.reduce((n, m) => n + messageTokens(m, approxTokens), 0);

function steps(n: number): Step[] {
  const out: Step[] = [];
  for (let k = 0; k < n; k++) {
    if (k === 2)
      out.push({
        cmd: 'python -m pytest tests/test_auth.py -x',
        exit: 1,
        out: [
          '============================= test session starts ==============================',
          ...Array.from({ length: 30 }, (_, j) => `collected line ${j} ....`),
          '_________________________ test_validate_claims __________________________',
          '    def test_validate_claims():',
          '>       assert validate_claims(token) == 42',
          'E       AssertionError: assert None == 42',
          'services/auth_token.py:142: in validate_claims',
          "E   TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'",
          'FAILED tests/test_auth.py::test_validate_claims - AssertionError: assert None == 42',
          '1 failed in 0.12s',
        ].join('\n'),
      });
    else if (k === 5)
      out.push({
        cmd: 'npx tsc --noEmit',
        exit: 2,
        out:
          `src/api/handler.ts(17,9): error TS2345: Argument of type 'string' is not assignable.\n` +
          codeLines('noise', 40),
      });
    else if (k === 7)
      out.push({ cmd: 'git log --oneline -3', out: '3f2a9c1e fix auth\n9b8c7d6a add tests\n1a2b3c4d init' });
    else out.push({ cmd: `sed -n '1,60p' src/mod${k % 5}.py`, out: codeLines(`m${k}`, 60) });
  }
  return out;
}

const TASK = 'Fix the failing auth test.\nDo not modify tests.\nYou must keep the public API unchanged.';

async function replay(reqs: ChatMessage[][], extra: Partial<Parameters<typeof runPureChain>[2]> = {}) {
  let st: PureChainState | undefined;
  const outs: ChatMessage[][] = [];
  const rs: Receipt[][] = [];
  const artifacts = new MemoryArtifactStore();
  for (const req of reqs) {
    const r = await runPureChain(req, st, {
      ledger: { eviction: false },
      compaction: {
        budgetTokens: M,
        artifacts: { put: (c) => artifacts.put('t1', c), get: (h) => artifacts.get('t1', h) },
      },
      ...extra,
    });
    st = JSON.parse(JSON.stringify(r.state)) as PureChainState;
    outs.push(r.messages);
    rs.push(r.receipts);
  }
  return { outs, rs, st: st!, artifacts };
}

describe('compaction watermarks', () => {
  it('compacts only at τ_high, down to τ_low, and re-sends the prefix byte-identically', async () => {
    const msgs = buildSession(TASK, steps(40));
    const { outs, rs } = await replay(requestsOf(msgs));
    let compactions = 0;
    for (let k = 0; k < outs.length; k++) {
      const c = rs[k].find((r) => r.action === 'compacted');
      if (c) {
        compactions++;
        expect(c.tokens_before!).toBeGreaterThanOrEqual(0.8 * M);
        expect(c.tokens_after!).toBeLessThanOrEqual(0.5 * M);
        expect(tokens(outs[k])).toBeLessThanOrEqual(0.5 * M);
      } else if (!rs[k].some((r) => r.action === 'refused')) {
        expect(tokens(outs[k])).toBeLessThan(0.8 * M);
      }
      if (k > 0 && !c) {
        // between compactions: the previous prompt is a message-wise prefix of this one
        for (let i = 0; i < outs[k - 1].length; i++)
          expect(JSON.stringify(outs[k][i])).toBe(JSON.stringify(outs[k - 1][i]));
      }
    }
    expect(compactions).toBeGreaterThanOrEqual(2);
  });

  it('keeps the verbatim set and constraints across repeated compactions', async () => {
    const s = steps(40);
    const msgs = buildSession(TASK, s);
    // a later user interjection with a constraint, in text between calls
    msgs.splice(12, 0, { role: 'user', content: 'Never touch the migrations folder.' });
    const { outs, rs } = await replay(requestsOf(msgs));
    expect(rs.flat().filter((r) => r.action === 'compacted').length).toBeGreaterThanOrEqual(2);
    const final = outs[outs.length - 1].map(messageText).join('\n');
    for (const v of [
      'services/auth_token.py:142',
      'validate_claims',
      'TypeError',
      'E       AssertionError: assert None == 42',
      'FAILED tests/test_auth.py::test_validate_claims - AssertionError: assert None == 42',
      'TS2345',
      'src/api/handler.ts',
      '3f2a9c1e',
      'Do not modify tests.',
      'You must keep the public API unchanged.',
      'Never touch the migrations folder.',
    ])
      expect(final).toContain(v);
    const cp = outs[outs.length - 1].find((m) => String(m.content).startsWith('[ctxgate] checkpoint'));
    expect(String(cp?.content)).toContain('- Never touch the migrations folder.');
    // the task is pinned verbatim: its constraints are referred to, not repeated
    expect(String(cp?.content)).toMatch(/Constraints: the \d+ stated in the task above still hold/);
    expect(String(cp?.content)).not.toContain('- Do not modify tests.');
  });

  it('refuses (with a receipt) when the verbatim set cannot be kept', async () => {
    const msgs = buildSession(TASK, steps(20));
    const { rs, outs } = await replay(requestsOf(msgs), {
      compaction: { budgetTokens: M, keepIdentifiersLine: false },
    });
    const refusals = rs.flat().filter((r) => r.action === 'refused');
    expect(refusals.some((r) => /verbatim set would lose/.test(r.reason))).toBe(true);
    // whatever compactions were accepted still kept every planted item
    const final = outs[outs.length - 1].map(messageText).join('\n');
    for (const v of [
      'services/auth_token.py:142',
      'TS2345',
      'src/api/handler.ts',
      '3f2a9c1e',
      'E       AssertionError: assert None == 42',
    ])
      expect(final).toContain(v);
  });

  it('with last-n elision: prefix stable until the compaction point, fewer prefilled tokens', async () => {
    const msgs = buildSession(TASK, steps(40));
    const reqs = requestsOf(msgs).map((r) => elideLastN(r, 3));
    const { outs, rs } = await replay(reqs);
    let prefillOurs = 0;
    let prefillPass = 0;
    const common = (a: ChatMessage[], b: ChatMessage[]) => {
      let i = 0;
      while (i < a.length && i < b.length && JSON.stringify(a[i]) === JSON.stringify(b[i])) i++;
      return tokens(b.slice(i));
    };
    for (let k = 0; k < outs.length; k++) {
      prefillOurs += k ? common(outs[k - 1], outs[k]) : tokens(outs[k]);
      prefillPass += k ? common(reqs[k - 1], reqs[k]) : tokens(reqs[k]);
      if (k > 0 && !rs[k].some((r) => r.action === 'compacted' || r.action === 'reset'))
        for (let i = 0; i < outs[k - 1].length; i++)
          expect(JSON.stringify(outs[k][i])).toBe(JSON.stringify(outs[k - 1][i]));
    }
    expect(rs.flat().some((r) => r.action === 'reset')).toBe(false);
    expect(prefillPass / prefillOurs).toBeGreaterThan(1.5);
  });

  it('a head truncation whose marker outweighs a tiny compacted output keeps the compacted prefix', async () => {
    // Tiny outputs (5 lines) truncated to their first 3 lines plus a longer marker once older
    // than the last 3: below the watermark that is an elision (fingerprint), not a rewrite.
    const s = steps(40).map((st, k) =>
      k > 7 && k % 3 === 1 ? { ...st, out: `Found rho_${k} at line ${k}\nFix applied!` } : st,
    );
    const trim = (req: ChatMessage[]): ChatMessage[] => {
      const tools = req.map((m, i) => (m.role === 'tool' ? i : -1)).filter((i) => i >= 0);
      const old = new Set(tools.slice(0, Math.max(0, tools.length - 3)));
      return req.map((m, i) => {
        if (!old.has(i)) return m;
        const lines = String(m.content).split('\n');
        return { ...m, content: [...lines.slice(0, 3), `<<${lines.length} lines trimmed by harness>>`].join('\n') };
      });
    };
    const msgs = buildSession(TASK, s);
    const { outs, rs } = await replay(requestsOf(msgs).map(trim));
    expect(rs.flat().filter((r) => r.action === 'compacted').length).toBeGreaterThanOrEqual(2);
    expect(rs.flat().some((r) => r.action === 'reset')).toBe(false);
    const final = outs[outs.length - 1].map(messageText).join('\n');
    for (const v of ['services/auth_token.py:142', 'TS2345', '3f2a9c1e']) expect(final).toContain(v);
    // a rewrite below the watermark (new lines, not a reduction) still resets
    const reqs = requestsOf(msgs);
    const edited = reqs.map((r, k) =>
      k === reqs.length - 1
        ? r.map((m, i) => (i === 5 ? { ...m, content: `${String(m.content)}\nNEW 1\nNEW 2` } : m))
        : r,
    );
    const again = await replay(edited);
    expect(again.rs[again.rs.length - 1].some((r) => r.action === 'reset')).toBe(true);
  });

  it('best effort past M* when τ_low is unreachable (large pinned task); strict mode refuses', async () => {
    const bigTask = TASK + '\n' + 'Background: '.repeat(300);
    const msgs = buildSession(bigTask, steps(30));
    const loose = await replay(requestsOf(msgs));
    const partial = loose.rs.flat().filter((r) => r.action === 'compacted_above_low');
    expect(partial.length).toBeGreaterThan(0);
    for (const r of partial) {
      expect(r.tokens_before!).toBeGreaterThanOrEqual(BEST_EFFORT_FROM * M);
      expect(r.tokens_after!).toBeLessThanOrEqual(DEFAULT_HIGH * M);
      expect(r.reason).toMatch(/τ_low \d+ unreachable/);
    }
    // every call after the first compaction stays within M* (a refusal near M* is retried)
    const first = loose.rs.findIndex((r) => r.some((x) => x.action.startsWith('compacted')));
    for (const o of loose.outs.slice(first)) expect(tokens(o)).toBeLessThanOrEqual(M);
    const strict = await replay(requestsOf(msgs), { compaction: { budgetTokens: M, bestEffort: false } });
    expect(strict.rs.flat().some((r) => r.action.startsWith('compacted'))).toBe(false);
    expect(strict.rs.flat().some((r) => r.action === 'refused')).toBe(true);
  });

  it('near M* a recent refusal does not hold back the next attempt', async () => {
    const msgs = buildSession(TASK, steps(30));
    const req = requestsOf(msgs).find((r) => tokens(r) >= 0.92 * M && tokens(r) < M)!;
    expect(req).toBeDefined();
    const refused = {
      v: 1 as const,
      n: 0,
      watermark: 0,
      pinnedEnd: 0,
      hashes: [],
      entries: [],
      constraints: [],
      refusedAt: tokens(req) - 10,
    };
    const r = await compactMessages(req, refused, { budgetTokens: M });
    expect(r.compacted).toBeDefined();
    expect(r.compacted!.tokensAfter).toBeLessThanOrEqual(DEFAULT_HIGH * M);
    // below the best-effort zone the refusal still spaces attempts by 0.1·M*
    const early = requestsOf(msgs).find((r2) => tokens(r2) >= DEFAULT_HIGH * M && tokens(r2) < 0.85 * M)!;
    const held = await compactMessages(early, { ...refused, refusedAt: tokens(early) - 10 }, { budgetTokens: M });
    expect(held.compacted).toBeUndefined();
  });
});
