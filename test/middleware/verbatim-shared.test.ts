import { describe, expect, it } from 'vitest';
import {
  keptList,
  messageVerbatim,
  missingFrom,
  occursIn,
  shownText,
  verbatimSet,
} from '../../middleware/compaction/verbatim.ts';

describe('verbatim presence (one definition for compaction and benches)', () => {
  it('needs word boundaries at word-character ends', () => {
    expect(occursIn('line 12', 'see line 123')).toBe(false);
    expect(occursIn('line 12', 'see line 12, in f')).toBe(true);
    expect(occursIn('foo.py', 'src/foo.py:12')).toBe(true);
    expect(occursIn('foo.py', 'foo.pyc')).toBe(false);
    expect(occursIn('3f2a9c1e', 'commit 3f2a9c1e0')).toBe(false);
    expect(missingFrom(['E123', 'a.py'], 'E1234 b/a.py')).toEqual(['E123']);
  });

  it('keeps a deduplicated list whose text still holds every item', () => {
    const items = ['src/x.py', 'src/x.py:42', 'x.py', 'TypeError', 'line 7', 'TypeError', 'line 70'];
    const list = keptList(items);
    expect(list).toEqual(['src/x.py:42', 'TypeError', 'line 7', 'line 70']);
    expect(missingFrom(items, list.join(' | '))).toEqual([]);
  });

  it('takes a message verbatim set over content and decoded tool arguments', () => {
    const m = {
      role: 'assistant' as const,
      content: 'Fix it',
      tool_calls: [
        {
          id: 'c1',
          type: 'function' as const,
          function: {
            name: 'bash',
            arguments: JSON.stringify({
              command: "cat > t.py << 'EOF'\nraise AssertionError('x')\nEOF\nsed -n 1,5p pkg/mod.py",
            }),
          },
        },
      ],
    };
    expect(shownText(m)).toContain('\nraise AssertionError');
    const v = messageVerbatim(m);
    expect(v).toContain('pkg/mod.py');
    expect(v).toContain('t.py');
    // an assertion line is a line of the command, not the whole JSON-escaped argument string
    expect(v.every((x) => !x.includes('"command"'))).toBe(true);
    expect(verbatimSet('kept: a/b.py | E501')).toEqual([]);
  });
});

describe('digest kept lists', () => {
  it('lists an identifier once across entries and not at all when the prompt shows it elsewhere', async () => {
    const { renderDigest } = await import('../../middleware/compaction/digest.ts');
    const entry = (n: number, verbatim: string[]) => ({
      from: n,
      to: n,
      id: `c${n}`,
      label: `pytest -x #${n}`,
      exit: 1,
      level: 2 as const,
      lines: 40,
      hash: `h${n}`,
      verbatim,
    });
    const d = renderDigest(
      [entry(1, ['src/a.py:3', 'src/a.py', 'KeyError']), entry(2, ['src/a.py:3', 'E501', 'KeyError'])],
      true,
      (v) => v === 'E501',
    );
    expect(d.match(/src\/a\.py:3/g)?.length).toBe(1);
    expect(d.match(/KeyError/g)?.length).toBe(1);
    expect(d).not.toContain('E501');
    expect(missingFrom(['src/a.py', 'src/a.py:3', 'KeyError'], d)).toEqual([]);
  });
});
