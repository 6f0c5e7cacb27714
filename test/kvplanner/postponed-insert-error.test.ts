// a postponed routing insert (5dac7ed) that throws, done by the next reader
// rather than by its own request's send gate: the error must reach its own request's `sent`.
import { expect, it } from 'vitest';
import { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import { info, workers } from './fixtures.ts';

const chain = (s: string, n: number) => Array.from({ length: n }, (_, i) => (i < 8 ? `root-${i}` : `${s}-${i}`));

it('an insert that throws, done by another request, fails neither request', () => {
  const p = new CtxgatePolicy();
  const orig = PrefixIndex.prototype.inserting;
  let armed = true;
  PrefixIndex.prototype.inserting = function (this: PrefixIndex, ...a: Parameters<typeof orig>) {
    const f = orig.apply(this, a);
    if (!armed) return f;
    armed = false;
    return () => {
      throw new Error('insert broke');
    };
  };
  try {
    const runs: Array<() => void> = [];
    const a = {
      ...info({ sessionId: 'a', blockHashes: chain('a', 64), promptTokens: 1024 }),
      sent: (r: () => void) => void runs.push(r),
    };
    p.select(workers(2), a);
    // B's decision comes before A's send gate opened
    const b = info({ sessionId: 'b', blockHashes: chain('b', 64), promptTokens: 1024 });
    expect(() => p.select(workers(2), b)).not.toThrow();
    // A's gate: its work was done; the error is handed to A's `sent`, where the gateway catches it
    const errs: string[] = [];
    for (const run of runs)
      try {
        run();
      } catch (e) {
        errs.push(String(e));
      }
    expect(errs).toEqual(['Error: insert broke']);
  } finally {
    PrefixIndex.prototype.inserting = orig;
  }
});
