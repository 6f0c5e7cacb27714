// Run by test/kvplanner/prefix-index-cycle.test.ts in a child process with a timeout: each
// scenario gives the prefix index a cycle of children (a block a child of its own descendant, as
// a hash collision or a hostile engine's events could) and then makes it evict. Without the cycle
// guard (prefix-index-entry.ts) the eviction loops for ever, so the process is killed and prints
// nothing; with it, one JSON line per scenario: blocks held afterwards, capacity, breaks counted.
import { cycleBreakCounts } from '../../kvplanner/prefix-index-entry.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';

interface Outcome {
  name: string;
  blocks: number;
  capacity: number;
  breaks: number;
  /** what the index still answers for the cycle's chain, the other chains and a new one */
  answers: number[];
}

function report(name: string, idx: PrefixIndex, before: number, chains: string[][]): Outcome {
  return {
    name,
    blocks: idx.size('w'),
    capacity: idx.capacity('w'),
    breaks: cycleBreakCounts.broken - before,
    answers: chains.map((c) => idx.matchLength('w', c)),
  };
}

const chain = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);
const out: Outcome[] = [];

{
  // A → B → A, both held, then a capacity of 1 (setCapacity shrinks at once)
  const before = cycleBreakCounts.broken;
  const idx = new PrefixIndex(16);
  idx.insert('w', ['A', 'B', 'A']);
  idx.setCapacity('w', 1);
  out.push(report('two-cycle, setCapacity', idx, before, [['A', 'B']]));
}
{
  // blocks their own children (a chain with the same hash twice in a row), beside an ordinary
  // chain, evicted by inserts past the capacity: the ordinary blocks go first, then only the
  // self-looped ones are left, over the capacity
  const before = cycleBreakCounts.broken;
  const idx = new PrefixIndex(12);
  idx.insert('w', ['S', 'S']);
  idx.insert('w', ['T', 'T']);
  idx.insert('w', ['U', 'U']);
  idx.setCapacity('w', 4);
  const other = chain('a', 5);
  idx.insert('w', other);
  idx.setCapacity('w', 1);
  out.push(report('self-loops, inserts', idx, before, [['S'], ['T'], ['U'], other]));
}
{
  // a longer cycle under a root, inserted in steps (deferred work) of one block each into a
  // capacity of 2: each step's shrink looks at one queue entry, so the guard must count across
  // steps; then an ordinary chain, also stepped
  const before = cycleBreakCounts.broken;
  const idx = new PrefixIndex(2);
  const stepped = (c: string[], blocks: number) => {
    const step = idx.inserting('w', c);
    let calls = 0;
    while (!step(blocks)) if (++calls > 100_000) throw new Error('stepped insert never finished');
  };
  stepped(['R', 'X', 'Y', 'Z', 'X'], 1);
  const long = chain('L', 20);
  stepped(long, 3);
  out.push(report('three-cycle, stepped insert', idx, before, [['R', 'X', 'Y', 'Z'], long]));
}
{
  // prepare() with a shrinking KV budget (bounded evictions per call)
  const before = cycleBreakCounts.broken;
  const idx = new PrefixIndex(1000);
  idx.insert('w', ['P', 'Q', 'P']);
  for (let i = 0; i < 20; i++) idx.insert('w', chain(`p${i}-`, 10));
  idx.prepare('w', 1);
  out.push(report('two-cycle, prepare', idx, before, [['P', 'Q']]));
}
for (const o of out) console.log(JSON.stringify(o));
