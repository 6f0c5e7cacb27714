// bench chaos's heap-snapshot comparison: objects allocated between two snapshots of this process
// and still held are found by constructor, with the holder that keeps them on their retainer path;
// objects that existed in the first snapshot, and ones dropped before the second, are not counted.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { afterAll, describe, expect, it } from 'vitest';
import { newBytesByHolder, newObjects, readHeap, retainerPath, retainerTree } from '../../loadtest/chaos/heap-diff.ts';

class HeapDiffProbe {
  constructor(readonly n: number) {}
}
class HeapDiffHolder {
  readonly kept: HeapDiffProbe[] = [];
}

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-heap-diff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('heap-diff', () => {
  it('counts what was allocated and kept between two snapshots, and names its holder', () => {
    const holder = new HeapDiffHolder();
    for (let i = 0; i < 7; i++) holder.kept.push(new HeapDiffProbe(i)); // present in both: not new
    const a = readHeap(writeHeapSnapshot(join(dir, 'a.heapsnapshot')));
    for (let i = 0; i < 300; i++) holder.kept.push(new HeapDiffProbe(i));
    let dropped: HeapDiffProbe[] | undefined = Array.from({ length: 500 }, (_, i) => new HeapDiffProbe(i));
    expect(dropped.length).toBe(500);
    dropped = undefined;
    const b = readHeap(writeHeapSnapshot(join(dir, 'b.heapsnapshot')));

    const probes = newObjects(a, b).find((g) => g.name === 'HeapDiffProbe');
    expect(probes?.count).toBe(300);
    const tree = retainerTree(b);
    for (const s of probes!.samples)
      expect(retainerPath(b, tree, s)).toMatch(/HeapDiffHolder\.kept → Array\[\d+\] → HeapDiffProbe$/);
    const byHolder = newBytesByHolder(a, b, 64).filter((g) =>
      g.key.endsWith('HeapDiffHolder.kept → Array[n] → HeapDiffProbe'),
    );
    expect(byHolder.reduce((n, g) => n + g.count, 0)).toBe(300);
    expect(holder.kept.length).toBe(307);
  });
});
