// The README's config field table and the one config schema (TypeBox) name the same fields, both
// ways: every documented field exists in the schema, and every schema field is documented (a row
// for an object, such as `ledger`, documents the fields under it).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../gateway/config/schema.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
}

/** Every field path of the schema (`models[].workers[].url`), objects included. */
function schemaPaths(node: SchemaNode, prefix: string, out: Map<string, boolean>): void {
  const variants = node.anyOf ?? [node];
  for (const v of variants) {
    if (v.type === 'array' && v.items) {
      const arr = `${prefix}[]`;
      const objects = v.items.type === 'object' || !!v.items.anyOf;
      out.set(arr, !objects);
      if (objects) schemaPaths(v.items, arr, out);
      continue;
    }
    if (v.type === 'object' && v.properties) {
      for (const [k, child] of Object.entries(v.properties)) {
        const path = prefix ? `${prefix}.${k}` : k;
        const leaf = !(child.properties || child.items || child.anyOf?.some((c) => c.properties || c.items));
        out.set(path, leaf);
        if (!leaf) schemaPaths(child, path, out);
      }
    }
  }
}

function documentedFields(): string[] {
  const start = README.indexOf('### Fields and defaults');
  expect(start).toBeGreaterThan(0);
  const table = README.slice(start).split('\n\n')[1];
  const rows = table.split('\n').slice(2);
  return rows.flatMap((row) => [...row.split('|')[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
}

describe('README config field table', () => {
  const all = new Map<string, boolean>();
  schemaPaths(ConfigSchema as unknown as SchemaNode, '', all);
  const documented = documentedFields();

  it('reads both sides (the check is not vacuous)', () => {
    expect(all.size).toBeGreaterThan(60);
    expect(documented.length).toBeGreaterThan(60);
  });

  it('documents each field once (a second row could contradict the first)', () => {
    expect(documented.filter((d, i) => documented.indexOf(d) !== i)).toEqual([]);
  });

  it('documents only fields the schema has', () => {
    expect(documented.filter((d) => !all.has(d))).toEqual([]);
  });

  it('documents every field the schema has (itself or an object above it)', () => {
    const covered = (p: string): boolean =>
      documented.some((d) => p === d || p.startsWith(`${d}.`) || p.startsWith(`${d}[]`));
    const leaves = [...all].filter(([, leaf]) => leaf).map(([p]) => p);
    expect(leaves.filter((p) => !covered(p))).toEqual([]);
  });
});
