// Sums a V8 .cpuprofile's self time by function (name + file:line), the view `bench overhead
// --cpu-prof DIR` is read with: `tsx loadtest/overhead/profile-summary.ts FILE [TOP]`.
// O(nodes + samples).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
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

export function selfTimes(p: CpuProfile): SelfTime[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const ms = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i]);
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    if (!n) continue;
    const f = n.callFrame;
    const where = f.url ? ` ${f.url.replace(/^.*\/(node_modules\/|wt\/[^/]+\/)/, '')}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'}${where}`;
    ms.set(key, (ms.get(key) ?? 0) + dt);
    total += dt;
  }
  return [...ms].map(([fn, v]) => ({ fn, ms: v, share: total > 0 ? v / total : 0 })).sort((a, b) => b.ms - a.ms);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [TOP]');
  const top = Number(process.argv[3] ?? 40);
  for (const r of selfTimes(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile).slice(0, top)) {
    process.stdout.write(`${r.ms.toFixed(0).padStart(8)} ms ${(r.share * 100).toFixed(1).padStart(5)} %  ${r.fn}\n`);
  }
}
