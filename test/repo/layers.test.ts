import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ACCOUNTING_LAYERS,
  accountingUpward,
  importCycles,
  importEdges,
  LAYERS,
  sourceFiles,
  upwardImports,
} from './import-graph.ts';

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

  it('accounting is one folder ordered types -> record -> stores -> report -> routes, imports pointing down', () => {
    const files = sourceFiles(ROOT);
    for (const l of ACCOUNTING_LAYERS) expect(files.some((f) => f.startsWith(`gateway/accounting/${l}/`))).toBe(true);
    expect(files.filter((f) => /^gateway\/(usage|ledger|report)\//.test(f))).toEqual([]);
    expect(accountingUpward(edges).map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
    const planted = [
      { from: 'gateway/accounting/stores/a.ts', to: 'gateway/accounting/report/b.ts' },
      { from: 'gateway/accounting/report/b.ts', to: 'gateway/accounting/stores/a.ts' },
    ];
    expect(accountingUpward(planted)).toEqual([planted[0]]);
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
