import { describe, expect, it } from 'vitest';
import { extractStructured } from '../../middleware/compaction/extract.ts';
import {
  collapseProgressBars,
  foldDiffContext,
  losslessFilter,
  resolveCarriageReturns,
  stripAnsi,
} from '../../middleware/compaction/lossless.ts';
import { constraintLines, verbatimSet } from '../../middleware/compaction/verbatim.ts';

describe('lossless filters', () => {
  it('strips ANSI, resolves \\r overwrites, collapses progress bars', () => {
    expect(stripAnsi('\x1b[31mred\x1b[0m ok')).toBe('red ok');
    expect(resolveCarriageReturns('10%\r50%\r100% done\nnext')).toBe('100% done\nnext');
    const bars = [
      '  10%|█         | 1/10 [00:01<00:09]',
      '  50%|█████     | 5/10 [00:05<00:05]',
      ' 100%|██████████| 10/10 [00:10<00:00]',
      'Done',
    ].join('\n');
    expect(collapseProgressBars(bars)).toBe(' 100%|██████████| 10/10 [00:10<00:00]\nDone');
  });
  it('folds unchanged diff context but keeps changes', () => {
    const diff = [
      '--- a/x.py',
      '+++ b/x.py',
      '@@ -1,20 +1,20 @@',
      ...Array.from({ length: 12 }, (_, i) => ` ctx${i}`),
      '-old',
      '+new',
      ' tail',
    ].join('\n');
    const f = foldDiffContext(diff);
    expect(f).toContain('(6 unchanged lines)');
    expect(f).toContain('-old\n+new');
    expect(losslessFilter(diff)).toBe(f);
  });
});

describe('structured extraction', () => {
  it('keeps head, tail and error lines of a pytest run', () => {
    const log = [
      '==== test session starts ====',
      ...Array.from({ length: 80 }, (_, i) => `tests/test_m.py::test_${i} PASSED`),
      'E       assert 1 == 2',
      'tests/test_m.py:88: AssertionError',
      ...Array.from({ length: 40 }, (_, i) => `noise ${i}`),
      '1 failed, 80 passed',
    ].join('\n');
    const x = extractStructured(log);
    expect(x.split('\n').length).toBeLessThan(log.split('\n').length / 2);
    for (const l of [
      'E       assert 1 == 2',
      'tests/test_m.py:88: AssertionError',
      '1 failed, 80 passed',
      '==== test session starts ====',
    ])
      expect(x).toContain(l);
    expect(x).toMatch(/\[… \d+ lines omitted\]/);
  });
  it('keeps compiler and linter diagnostics', () => {
    const lines = [
      'src/a.ts(3,5): error TS2322: Type string is not assignable',
      'main.c:10:5: error: expected ; before }',
      'error[E0308]: mismatched types',
      '  --> src/main.rs:4:18',
      '   12:7  error  Unexpected any  @typescript-eslint/no-explicit-any',
      '--- FAIL: TestParse (0.00s)',
      '    parse_test.go:31: got 1 want 2',
    ];
    const log = [
      ...Array.from({ length: 30 }, (_, i) => `ok line ${i}`),
      ...lines,
      ...Array.from({ length: 30 }, (_, i) => `ok tail ${i}`),
    ].join('\n');
    const x = extractStructured(log);
    for (const l of lines) expect(x).toContain(l);
  });
});

describe('verbatim set and constraints', () => {
  it('collects paths, file:line, codes, hashes, assertions, exceptions', () => {
    const v = verbatimSet(
      'File "/app/services/auth.py", line 142, in validate_claims\nTypeError: bad\nsrc/x.ts:17:3 TS2345 commit 3f2a9c1e\nE       assert None == 42',
    );
    for (const x of [
      '/app/services/auth.py',
      'line 142',
      'validate_claims',
      'TypeError',
      'src/x.ts',
      'src/x.ts:17',
      'TS2345',
      '3f2a9c1e',
      'E       assert None == 42',
    ])
      expect(v).toContain(x);
    expect(verbatimSet('   1\tdef foo():\n   2\t    return 1')).toEqual([]);
  });
  it('finds constraint lines', () => {
    expect(constraintLines('Fix the bug.\nDo not modify tests.\nYou must keep the API.\nThanks')).toEqual([
      'Do not modify tests.',
      'You must keep the API.',
    ]);
  });
});
