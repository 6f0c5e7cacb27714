// Reads every TypeScript/JavaScript source of the repository and resolves its relative imports
// (static, type-only, re-exports and dynamic `import('...')` with a literal path) into a file graph,
// so a test can hold the layering rule and the no-cycle rule. Linear in the size of the sources;
// cycles found with Tarjan's strongly-connected components, O(files + imports).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** Top-level folders from the top of the stack to the bottom; a file may import only its own layer or lower ones. */
export const LAYERS = ['cli', 'loadtest', 'gateway', 'middleware', 'kvplanner'] as const;

const SOURCE_DIRS = ['bin', ...LAYERS];
const SOURCE_EXT = /\.(ts|js|mjs)$/;

export interface ImportEdge {
  from: string;
  to: string;
}

function walk(dir: string, out: string[]): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (SOURCE_EXT.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
}

/** Source files (repository-relative, forward slashes) of the layered folders and bin/. */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  for (const d of SOURCE_DIRS) walk(join(root, d), out);
  return out.map((p) => relative(root, p).split('\\').join('/')).sort();
}

/** Every relative import of every source file, resolved to a repository-relative path. */
export function importEdges(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of sourceFiles(root)) {
    const text = readFileSync(join(root, file), 'utf8');
    const info = ts.preProcessFile(text, true, true);
    for (const ref of info.importedFiles) {
      const spec = ref.fileName;
      if (!spec.startsWith('.')) continue;
      const target = relative(root, resolve(root, dirname(file), spec))
        .split('\\')
        .join('/');
      edges.push({ from: file, to: target });
    }
  }
  return edges;
}

/** Index of the file's layer in LAYERS, or -1 for files outside them (bin/, configs). */
export function layerOf(file: string): number {
  return (LAYERS as readonly string[]).indexOf(file.split('/')[0]);
}

/** Imports from a lower layer to a higher one. */
export function upwardImports(edges: ImportEdge[]): ImportEdge[] {
  return edges.filter((e) => {
    const a = layerOf(e.from);
    const b = layerOf(e.to);
    return a >= 0 && b >= 0 && b < a;
  });
}

/** Sub-layers of gateway/accounting/, top to bottom: a file imports only its own sub-layer or lower ones. */
export const ACCOUNTING_LAYERS = ['routes', 'report', 'stores', 'record', 'types'] as const;
const ACCOUNTING = 'gateway/accounting/';

function accountingLayerOf(file: string): number {
  if (!file.startsWith(ACCOUNTING)) return -1;
  return (ACCOUNTING_LAYERS as readonly string[]).indexOf(file.slice(ACCOUNTING.length).split('/')[0]);
}

/** Imports between accounting files that point up its order (types → record → stores → report → routes),
 * and accounting files outside a known sub-layer (reported as importing themselves). */
export function accountingUpward(edges: ImportEdge[]): ImportEdge[] {
  return edges.filter((e) => {
    const a = accountingLayerOf(e.from);
    const b = accountingLayerOf(e.to);
    if (e.from.startsWith(ACCOUNTING) && a < 0) return true;
    return a >= 0 && b >= 0 && b < a;
  });
}

/** Strongly connected components with more than one file (or a file importing itself). */
export function importCycles(edges: ImportEdge[]): string[][] {
  const adj = new Map<string, string[]>();
  for (const e of edges) {
    if (!adj.has(e.from)) adj.set(e.from, []);
    if (!adj.has(e.to)) adj.set(e.to, []);
    adj.get(e.from)!.push(e.to);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of adj.get(v)!) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || adj.get(v)!.includes(v)) out.push(comp.sort());
    }
  };
  for (const v of adj.keys()) if (!index.has(v)) strong(v);
  return out;
}
