// The README's error table names exactly the codes of the error registry with their statuses.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../middleware/errors.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README error table', () => {
  it('lists every registry code with its status, and no other fixed code', () => {
    const start = README.indexOf('registry (`middleware/errors.ts`)');
    expect(start).toBeGreaterThan(0);
    const rows = README.slice(start).split('\n\n')[1].split('\n').slice(2);
    const documented = new Map<string, number>();
    for (const row of rows) {
      const [, status, codes] = row.split('|').map((c) => c.trim());
      if (!/^\d{3}$/.test(status)) continue; // worker-status rows (`upstream_<status>`) are not registry codes
      for (const m of codes.matchAll(/`([a-z_]+)`/g)) documented.set(m[1], Number(status));
    }
    const registry = new Map(Object.entries(ERRORS).map(([code, spec]) => [code, spec.status as number]));
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(registry));
  });
});

describe('comments point inside the repository', () => {
  it('no source file cites the external design notes (the design lives in docs/)', async () => {
    const { sourceFiles } = await import('./import-graph.ts');
    const root = new URL('../../', import.meta.url);
    const offenders = sourceFiles(root.pathname).filter((f) =>
      /DESIGN(\.md)? ?§/.test(readFileSync(new URL(f, root), 'utf8')),
    );
    expect(offenders).toEqual([]);
  });
});
