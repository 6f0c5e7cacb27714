// The prefix index's cycle guard (prefix-index-entry.ts): chained hashes cannot make a block a
// child of its own descendant, but a collision or a hostile engine's events can, and eviction's
// leaves-first rule then sent the cycle's blocks back to the queue for ever (the process hung at
// 100 % CPU). The scenarios run in a child process with a timeout (a hang cannot be interrupted
// in this one); each must end within capacity, with the break counted. Without a cycle the guard
// never fires: a seeded workload of chains sharing roots, re-inserts, evictions and capacity
// changes counts 0 breaks (its answers against the guard-less reference: prefix-index-records).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';
import { cycleBreakCounts } from '../../kvplanner/prefix-index-entry.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';

/** Set once the child process showed the guard ends every scenario: only then may this process
 * make a cycle itself (without the guard it would hang the test run). */
let guardEnds = false;

const script = fileURLToPath(new URL('../helpers/prefix-index-cycle-run.ts', import.meta.url));

describe('prefix index: a cycle of children never hangs eviction', () => {
  it('every cycle scenario ends within capacity, the break counted (child process, 60 s limit)', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.signal, `killed after the timeout (a hang); stderr: ${r.stderr}`).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    const got = r.stdout
      .trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { name: string; blocks: number; capacity: number; breaks: number; answers: number[] },
      );
    expect(got.map((o) => o.name)).toEqual([
      'two-cycle, setCapacity',
      'self-loops, inserts',
      'three-cycle, stepped insert',
      'two-cycle, prepare',
    ]);
    for (const o of got) {
      expect(o.breaks, o.name).toBeGreaterThanOrEqual(1);
      // prepare() evicts at most PREPARE_SHRINK_STEP blocks a call; the rest: later calls
      if (o.name !== 'two-cycle, prepare') expect(o.blocks, o.name).toBeLessThanOrEqual(o.capacity);
    }
    const [two, self, three, prep] = got;
    expect(two).toMatchObject({ blocks: 1, capacity: 1, breaks: 1 });
    // three self-looped blocks into a capacity of 1: two breaks; the ordinary chain went first
    expect(self).toMatchObject({ blocks: 1, breaks: 2 });
    expect(self.answers.slice(0, 3).reduce((x, y) => x + y)).toBe(1);
    expect(self.answers[3]).toBe(0);
    // after the break the index works as usual: the newest chain's root blocks are held
    expect(three).toMatchObject({ blocks: 2, breaks: 1, answers: [0, 2] });
    expect(prep).toMatchObject({ blocks: 1, capacity: 1, breaks: 1 });
    guardEnds = true;
  });

  it('a break counts in ctxgate_prefix_index_cycle_breaks_total', async () => {
    expect(guardEnds, 'the child-process scenarios must pass first').toBe(true);
    const registry = new Registry();
    createMetrics(registry);
    const read = async () =>
      (await registry.getSingleMetric('ctxgate_prefix_index_cycle_breaks_total')!.get()).values[0]?.value ?? 0;
    const before = await read();
    const idx = new PrefixIndex(16);
    idx.insert('w', ['A', 'B', 'A']);
    idx.setCapacity('w', 1);
    expect(idx.size('w')).toBe(1);
    expect((await read()) - before).toBe(1);
  });

  it('no cycle, no break: a seeded workload counts none', () => {
    const before = cycleBreakCounts.broken;
    let seed = 11;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const idx = new PrefixIndex(96);
    const roots = ['r0', 'r1', 'r2'];
    for (let op = 0; op < 3000; op++) {
      const w = `w${rand(3)}`;
      const k = rand(10);
      const root = roots[rand(3)];
      const c = [root, ...Array.from({ length: 1 + rand(40) }, (_, i) => `${root}/${rand(6)}/${i}`)];
      if (k < 6) idx.insert(w, c);
      else if (k === 6) idx.evict(w, c, true, rand(c.length));
      else if (k === 7) idx.setCapacity(w, 8 + rand(120));
      else if (k === 8) {
        const step = idx.inserting(w, c);
        while (!step(1 + rand(8)));
      } else idx.prepare(w, 8 + rand(120));
    }
    expect(idx.stats().evictions).toBeGreaterThan(1000);
    expect(cycleBreakCounts.broken - before).toBe(0);
  });
});
