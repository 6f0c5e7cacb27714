// Compares two V8 heap snapshots of one process (bench chaos --heap-snapshots writes them): the
// objects alive in the second that were not in the first (V8 keeps node ids stable within a
// process), grouped by constructor, largest self size first, each group with the shortest
// retainer path from the GC roots of a few of its objects, so a leak names its holder. Run:
//   node --max-old-space-size=8192 --import tsx loadtest/chaos/heap-diff.ts A.heapsnapshot B.heapsnapshot [top]
// Cost: O(nodes + edges) time; the parsed snapshots in memory (several times their file size).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface Heap {
  nodeCount: number;
  /** per node */
  type: Uint8Array;
  name: Uint32Array;
  id: Uint32Array;
  selfSize: Float64Array;
  firstEdge: Uint32Array;
  /** per edge */
  edgeType: Uint8Array;
  edgeName: Uint32Array;
  edgeTo: Uint32Array;
  strings: string[];
  nodeTypes: string[];
  edgeTypes: string[];
}

export function readHeap(path: string): Heap {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as RawSnapshot;
  const m = raw.snapshot.meta;
  const nf = m.node_fields.length;
  const ef = m.edge_fields.length;
  const f = (k: string): number => m.node_fields.indexOf(k);
  const [iType, iName, iId, iSelf, iEdges] = ['type', 'name', 'id', 'self_size', 'edge_count'].map(f);
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((k) => m.edge_fields.indexOf(k));
  const n = raw.nodes.length / nf;
  const e = raw.edges.length / ef;
  const h: Heap = {
    nodeCount: n,
    type: new Uint8Array(n),
    name: new Uint32Array(n),
    id: new Uint32Array(n),
    selfSize: new Float64Array(n),
    firstEdge: new Uint32Array(n + 1),
    edgeType: new Uint8Array(e),
    edgeName: new Uint32Array(e),
    edgeTo: new Uint32Array(e),
    strings: raw.strings,
    nodeTypes: m.node_types[0],
    edgeTypes: m.edge_types[0],
  };
  let edge = 0;
  for (let i = 0; i < n; i++) {
    const o = i * nf;
    h.type[i] = raw.nodes[o + iType];
    h.name[i] = raw.nodes[o + iName];
    h.id[i] = raw.nodes[o + iId];
    h.selfSize[i] = raw.nodes[o + iSelf];
    h.firstEdge[i] = edge;
    edge += raw.nodes[o + iEdges];
  }
  h.firstEdge[n] = edge;
  for (let j = 0; j < e; j++) {
    h.edgeType[j] = raw.edges[j * ef + eType];
    h.edgeName[j] = raw.edges[j * ef + eName];
    h.edgeTo[j] = raw.edges[j * ef + eTo] / nf;
  }
  return h;
}

/** A node's group: the constructor for objects, else its type (string, array, code, …). */
export function groupOf(h: Heap, i: number): string {
  const t = h.nodeTypes[h.type[i]];
  if (t === 'object' || t === 'native') return h.strings[h.name[i]];
  if (t === 'closure') return `(closure ${h.strings[h.name[i]] || 'anonymous'})`;
  return `(${t})`;
}

/** Shortest-path parents from the root (node 0) over strong edges: parent node and edge per node. */
export function retainerTree(h: Heap): { parent: Int32Array; viaEdge: Int32Array } {
  const parent = new Int32Array(h.nodeCount).fill(-1);
  const viaEdge = new Int32Array(h.nodeCount).fill(-1);
  const weak = h.edgeTypes.indexOf('weak');
  const queue = new Uint32Array(h.nodeCount);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  parent[0] = 0;
  while (head < tail) {
    const i = queue[head++];
    for (let j = h.firstEdge[i]; j < h.firstEdge[i + 1]; j++) {
      if (h.edgeType[j] === weak) continue;
      const to = h.edgeTo[j];
      if (parent[to] !== -1) continue;
      parent[to] = i;
      viaEdge[to] = j;
      queue[tail++] = to;
    }
  }
  return { parent, viaEdge };
}

function edgeLabel(h: Heap, j: number): string {
  const t = h.edgeTypes[h.edgeType[j]];
  return t === 'element' || t === 'hidden' ? `[${h.edgeName[j]}]` : `.${h.strings[h.edgeName[j]] ?? h.edgeName[j]}`;
}

export function retainerPath(h: Heap, tree: ReturnType<typeof retainerTree>, i: number, max = 14): string {
  const parts: string[] = [];
  for (let k = i, d = 0; k > 0 && d < max; d++) {
    const e = tree.viaEdge[k];
    if (e < 0) return `${parts.reverse().join('')} (unreachable)`;
    parts.push(`${edgeLabel(h, e)} → ${groupOf(h, k)}`);
    k = tree.parent[k];
  }
  return parts.reverse().join('');
}

/** The first `depth` steps of a node's shortest retainer path, indices folded ([n]), so objects
 *  held by the same structure share one key. */
export function holderKey(h: Heap, tree: ReturnType<typeof retainerTree>, i: number, depth: number): string {
  const steps: number[] = [];
  for (let k = i; k > 0; k = tree.parent[k]) {
    if (tree.viaEdge[k] < 0) return '(unreachable)';
    steps.push(k);
  }
  steps.reverse();
  return steps
    .slice(0, depth)
    .map((k) => {
      const e = tree.viaEdge[k];
      const t = h.edgeTypes[h.edgeType[e]];
      const label = t === 'element' || t === 'hidden' ? '[n]' : `.${h.strings[h.edgeName[e]]}`;
      return `${label} → ${groupOf(h, k)}`;
    })
    .join('');
}

/** Bytes of the objects new in `b` by holder (see holderKey), largest first. */
export function newBytesByHolder(a: Heap, b: Heap, depth: number): { key: string; count: number; bytes: number }[] {
  const old = new Set<number>();
  for (let i = 0; i < a.nodeCount; i++) old.add(a.id[i]);
  const tree = retainerTree(b);
  const by = new Map<string, { key: string; count: number; bytes: number }>();
  for (let i = 0; i < b.nodeCount; i++) {
    if (old.has(b.id[i])) continue;
    const key = holderKey(b, tree, i, depth);
    let g = by.get(key);
    if (!g) by.set(key, (g = { key, count: 0, bytes: 0 }));
    g.count++;
    g.bytes += b.selfSize[i];
  }
  return [...by.values()].sort((x, y) => y.bytes - x.bytes);
}

interface Group {
  name: string;
  count: number;
  bytes: number;
  samples: number[];
}

/** New objects in `b` (ids absent from `a`) by group, largest first. */
export function newObjects(a: Heap, b: Heap): Group[] {
  const old = new Set<number>();
  for (let i = 0; i < a.nodeCount; i++) old.add(a.id[i]);
  const groups = new Map<string, Group>();
  for (let i = 0; i < b.nodeCount; i++) {
    if (old.has(b.id[i])) continue;
    const name = groupOf(b, i);
    let g = groups.get(name);
    if (!g) groups.set(name, (g = { name, count: 0, bytes: 0, samples: [] }));
    g.count++;
    g.bytes += b.selfSize[i];
    if (g.samples.length < 3 || g.count % 997 === 0) g.samples[g.samples.length < 3 ? g.samples.length : 2] = i;
  }
  return [...groups.values()].sort((x, y) => y.bytes - x.bytes);
}

function main(argv: string[]): number {
  if (argv.length < 2) {
    process.stderr.write(
      'usage: heap-diff.ts A.heapsnapshot B.heapsnapshot [top=25] [holder depth=0: by constructor]\n',
    );
    return 2;
  }
  const a = readHeap(argv[0]);
  const b = readHeap(argv[1]);
  const top = Number(argv[2] ?? 25);
  const total = (h: Heap): number => h.selfSize.reduce((s, x) => s + x, 0);
  const mb = (x: number): string => (x / 2 ** 20).toFixed(2);
  process.stdout.write(`A: ${a.nodeCount} nodes, ${mb(total(a))} MB; B: ${b.nodeCount} nodes, ${mb(total(b))} MB\n`);
  const depth = Number(argv[3] ?? 0);
  if (depth > 0) {
    for (const g of newBytesByHolder(a, b, depth).slice(0, top))
      process.stdout.write(`${mb(g.bytes)} MB, ${g.count} new objects held by ${g.key}\n`);
    return 0;
  }
  const tree = retainerTree(b);
  for (const g of newObjects(a, b).slice(0, top)) {
    process.stdout.write(`\n+${g.count} ${g.name}: ${mb(g.bytes)} MB self\n`);
    for (const s of g.samples) process.stdout.write(`    ${retainerPath(b, tree, s)}\n`);
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main(process.argv.slice(2));
}
