// Sums a V8 .cpuprofile's self time by function (name + file:line), and its total time (self plus
// callees, each function counted once per sample), the view `bench overhead --cpu-prof DIR` is
// read with: `tsx loadtest/overhead/profile-summary.ts FILE [TOP] [--total]`.
// O(nodes + samples × stack depth).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  fn: string;
  ms: number;
  share: number;
}

function keyOf(n: ProfileNode): string {
  const f = n.callFrame;
  const where = f.url ? ` ${f.url.replace(/^.*\/(node_modules\/|wt\/[^/]+\/)/, '')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where}`;
}

/** Time by function: self time, or with `total` self plus callees (a recursive function once per sample). */
export function selfTimes(p: CpuProfile, total = false): SelfTime[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ms = new Map<string, number>();
  let all = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    let id: number | undefined = p.samples[i];
    if (!byId.has(id)) continue;
    all += dt;
    const seen = new Set<string>();
    while (id !== undefined) {
      const key = keyOf(byId.get(id)!);
      if (!seen.has(key)) {
        seen.add(key);
        ms.set(key, (ms.get(key) ?? 0) + dt);
      }
      if (!total) break;
      id = parent.get(id);
    }
  }
  return [...ms].map(([fn, v]) => ({ fn, ms: v, share: all > 0 ? v / all : 0 })).sort((a, b) => b.ms - a.ms);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [TOP] [--total]');
  const top = Number(process.argv[3] ?? 40);
  const total = process.argv.includes('--total');
  for (const r of selfTimes(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, total).slice(0, top)) {
    process.stdout.write(`${r.ms.toFixed(0).padStart(8)} ms ${(r.share * 100).toFixed(1).padStart(5)} %  ${r.fn}\n`);
  }
}
