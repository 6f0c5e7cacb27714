// Benchmark: `ctxgate report` over a large SQLite ledger.
//   npx tsx gateway/accounting/report/bench-report.ts [--rows 1000000] [--keep FILE]   (--keep reuses FILE when it exists)
// Generates N synthetic usage rows (20 tenants, 3 models, 8 workers, 5,000 sessions, 30 days),
// then times the report three ways, three runs each, printing the median:
//   in-process md (open + SQL aggregation + render), in-process html, and the full CLI process
//   (`node bin/ctxgate.js report --ledger FILE --group-by model`, including tsx startup).
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DDL, INSERT_SQL, toRow } from '../stores/sqlite-schema.ts';
import { SqliteLedger } from '../stores/sqlite.ts';
import { compilePricing, DEFAULT_PRICING_TABLE } from '../record/pricing.ts';
import { buildUsageRecord } from '../record/record.ts';
import { produceReport } from './render.ts';
import type { ReportFormat } from '../types/report.ts';

const DEFAULT_ROWS = 1_000_000;
const RUNS = 3;
const CAUSES = ['system_prompt_changed', 'tool_schema_changed', 'history_rewritten', 'timestamp_in_prefix', 'evicted'];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// Deterministic xorshift so runs are comparable.
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

export function generate(path: string, rows: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.exec(DDL);
  const insert = db.prepare(INSERT_SQL);
  const pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'default');
  const rnd = rng(42);
  const t0 = Date.now() - 30 * 86_400_000;
  const step = (30 * 86_400_000) / rows;
  const chunk = 50_000;
  for (let start = 0; start < rows; start += chunk) {
    db.transaction(() => {
      for (let i = start; i < Math.min(rows, start + chunk); i++) {
        const prompt = 1000 + Math.floor(rnd() * 30_000);
        const rec = buildUsageRecord(
          {
            time: Math.floor(t0 + i * step),
            requestId: `r${i}`,
            tenant: `team-${Math.floor(rnd() * 20)}`,
            keyId: 'k',
            sessionId: `s${Math.floor(rnd() * 5000)}`,
            model: ['qwen3-8b', 'llama3-70b', 'deepseek-v3'][Math.floor(rnd() * 3)],
            worker: `w${Math.floor(rnd() * 8)}`,
            status: rnd() < 0.01 ? 502 : 200,
            stream: rnd() < 0.7,
            promptTokens: prompt,
            cachedTokens: Math.floor(prompt * rnd()),
            outputTokens: Math.floor(rnd() * 800),
            usageReported: rnd() > 0.02,
            predictedCachedTokens: Math.floor(prompt * rnd()),
            ttftMs: rnd() * 3000,
            totalMs: 3000 + rnd() * 10_000,
            gatewayOverheadMs: rnd(),
            attempts: 1,
            breakCause: rnd() < 0.05 ? CAUSES[Math.floor(rnd() * CAUSES.length)] : undefined,
          },
          pricing,
        );
        insert.run(toRow(rec));
      }
    })();
  }
  db.close();
}

interface Timing {
  wall: number;
  cpu: number;
}

// CPU time is reported next to wall time: on a shared machine wall time measures the neighbours.
async function inProcess(path: string, format: ReportFormat): Promise<Timing> {
  const t = performance.now();
  const c = process.cpuUsage();
  const ledger = new SqliteLedger({ path, retentionDays: 3650, batchSize: 256, flushMs: 1000, readonly: true });
  const text = await produceReport(ledger, { groupBy: 'model' }, format);
  await ledger.close();
  if (text.length < 100) throw new Error('report unexpectedly short');
  const d = process.cpuUsage(c);
  return { wall: performance.now() - t, cpu: (d.user + d.system) / 1000 };
}

function cli(path: string): Timing {
  const t = performance.now();
  const r = spawnSync(
    '/usr/bin/time',
    ['-f', '%U %S', process.execPath, 'bin/ctxgate.js', 'report', '--ledger', path, '--group-by', 'model'],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`ctxgate report failed: ${r.stderr}`);
  const [u, sys] = r.stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return { wall: performance.now() - t, cpu: (u + sys) * 1000 };
}

function line(label: string, xs: Timing[]): string {
  const s = (v: number): string => (v / 1000).toFixed(2);
  return `${label}: median wall ${s(median(xs.map((x) => x.wall)))} s, cpu ${s(median(xs.map((x) => x.cpu)))} s  [wall ${xs.map((x) => s(x.wall)).join(', ')}]`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rows: { type: 'string' }, keep: { type: 'string' } } });
  const rows = values.rows ? Number(values.rows) : DEFAULT_ROWS;
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-bench-report-'));
  const path = values.keep ?? join(dir, 'usage.sqlite');
  try {
    const t = performance.now();
    if (values.keep && existsSync(path)) console.log(`reusing ${path}`);
    else {
      generate(path, rows);
      console.log(
        `generated ${rows.toLocaleString('en-US')} rows in ${((performance.now() - t) / 1000).toFixed(1)} s -> ${path}`,
      );
    }
    const md: Timing[] = [];
    const html: Timing[] = [];
    const proc: Timing[] = [];
    for (let i = 0; i < RUNS; i++) {
      md.push(await inProcess(path, 'md'));
      html.push(await inProcess(path, 'html'));
      proc.push(cli(path));
    }
    console.log(line(`report md   (in-process, ${RUNS} runs)`, md));
    console.log(line(`report html (in-process, ${RUNS} runs)`, html));
    console.log(line(`ctxgate report CLI process (${RUNS} runs, target <= 5 s)`, proc));
    console.log(
      `load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${cpus().length} cpus`,
    );
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
