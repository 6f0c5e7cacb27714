// The approximate radix tree on lone surrogates (JSON "\ud83dX" decodes to exactly that, and the
// gateway accepts it): a lone surrogate is a character of its own, so texts that share one and then
// differ split after it. Review F4: a tree that backed off before any high surrogate split with an
// empty upper node and looped forever (one request stopped the gateway). Counts, not timers: the
// node count after each insert is bounded by the texts' lengths.
import { describe, expect, it } from 'vitest';
import { ApproxRadixTree } from '../../kvplanner/approx-radix-tree.ts';

interface Node {
  children: Map<string, Node>;
}
function nodes(t: ApproxRadixTree): number {
  const root = (t as unknown as { root: Node }).root; // test-only: the tree's shape
  let n = 0;
  const stack = [root];
  for (let x = stack.pop(); x; x = stack.pop()) {
    n++;
    stack.push(...x.children.values());
  }
  return n;
}

const H = '\ud83d'; // a high surrogate
const L = '\ude00'; // a low surrogate
const cases: [string, string[]][] = [
  ['a shared lone high surrogate, then different units', [`${H}Xabc`, `${H}Ydef`]],
  ['a lone high surrogate, then a pair starting with it', [`${H}X`, `${H}${L}y`, `${H}${H}${L}`]],
  ['a pair, then the same high surrogate alone', [`😀a`, `${H}a`, `${H}`]],
  ['lone low surrogates', [`${L}a`, `${L}b`, `x${L}`, `x${L}${L}`]],
  ['two pairs sharing the high surrogate', ['😀a', '😁b', '😀😁', `${H}`]],
];

describe('approximate radix tree: lone surrogates', () => {
  it.each(cases)('%s: every insert returns, the tree stays small, each text matches whole', (_name, texts) => {
    const t = new ApproxRadixTree();
    let units = 0;
    texts.forEach((text, k) => {
      t.insert(text, `w${k}`);
      units += text.length;
      expect(nodes(t)).toBeLessThanOrEqual(1 + 2 * units);
    });
    texts.forEach((text, k) => {
      expect(t.matchFor(text, `w${k}`)).toBe([...text].length);
      expect(t.prefixMatch(text).matchedChars).toBe([...text].length);
    });
  });
});
