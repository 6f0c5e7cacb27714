import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importEdges, LAYERS, sourceFiles, upwardImports } from './import-graph.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('layers: imports point down cli -> loadtest -> gateway -> middleware -> kvplanner', () => {
  const edges = importEdges(ROOT);

  it('reads the whole tree (the check is not vacuous)', () => {
    const files = sourceFiles(ROOT);
    for (const layer of LAYERS) expect(files.some((f) => f.startsWith(`${layer}/`))).toBe(true);
    expect(edges.length).toBeGreaterThan(200);
  });

  it('no file imports a layer above its own', () => {
    expect(upwardImports(edges).map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it('no import cycle between files (type-only imports included)', () => {
    expect(importCycles(edges)).toEqual([]);
  });

  it('the checker itself finds an upward import and a cycle', () => {
    const planted = [
      { from: 'middleware/a.ts', to: 'gateway/b.ts' },
      { from: 'gateway/b.ts', to: 'gateway/c.ts' },
      { from: 'gateway/c.ts', to: 'gateway/b.ts' },
    ];
    expect(upwardImports(planted)).toEqual([planted[0]]);
    expect(importCycles(planted)).toEqual([['gateway/b.ts', 'gateway/c.ts']]);
  });
});
