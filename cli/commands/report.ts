// ctxgate report: the FinOps report from the usage ledger, in md, csv, json, html or FOCUS CSV.
import { writeFileSync, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../../gateway/config/load.ts';
import {
  DEFAULT_LEDGER_BATCH_SIZE,
  DEFAULT_LEDGER_FLUSH_MS,
  DEFAULT_LEDGER_PATH,
  DEFAULT_LEDGER_RETENTION_DAYS,
} from '../../gateway/config/schema.ts';
import { openLedger } from '../../gateway/accounting/stores/open.ts';
import { RedisStreamLedger } from '../../gateway/accounting/stores/redis-stream.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import type { UsageLedger } from '../../gateway/accounting/types/ledger.ts';
import { parseTime, produceReport } from '../../gateway/accounting/report/render.ts';
import {
  GROUP_BY,
  REPORT_FORMATS,
  type GroupBy,
  type ReportFormat,
  type ReportQuery,
} from '../../gateway/accounting/types/report.ts';

export const help = `ctxgate report [--ledger PATH | --config FILE | --redis URL] [options]

FinOps report from the usage ledger: requests, prompt / cached / output tokens, cost split by
kind (uncached input, cached input, cache write, output), savings from prefix caching (cost with
no cache hit minus actual cost) and hit rate, per group.

  --ledger PATH     SQLite ledger file (default: ${DEFAULT_LEDGER_PATH})
  --config FILE     read the ledger location from a gateway config (ledger.path, or the Redis
                    Stream when redis.url is set)
  --redis URL       read the shared Redis Stream ledger (ctxgate:usage)
  --since T         start (inclusive): ISO 8601, epoch ms, or relative -24h / -7d / -30m
  --until T         end (exclusive), same forms
  --group-by KEY    tenant | model | session | worker | day (default: tenant)
  --tenant T        only this tenant's rows
  --top N           sessions listed under "top sessions" (default 10)
  --format F        md | csv | json | html | focus (default: md); focus: FOCUS 1.2 cost and usage
                    rows (CSV, one per hour, tenant, session, model, worker and SKU) that sum to
                    the json report of the same range
  --out FILE        write to FILE instead of stdout (html is one self-contained file)

Benchmark (1M rows, median of 3): npx tsx gateway/accounting/report/bench-report.ts [--rows N]`;

interface Values {
  ledger?: string;
  config?: string;
  redis?: string;
  since?: string;
  until?: string;
  'group-by'?: string;
  tenant?: string;
  top?: string;
  format?: string;
  out?: string;
}

const OPTIONS = {
  ledger: { type: 'string' },
  config: { type: 'string', short: 'c' },
  redis: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  'group-by': { type: 'string' },
  tenant: { type: 'string' },
  top: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string', short: 'o' },
} as const;

class UsageError extends Error {}

function openFromArgs(v: Values): UsageLedger {
  const writerDefaults = { batchSize: DEFAULT_LEDGER_BATCH_SIZE, flushMs: DEFAULT_LEDGER_FLUSH_MS };
  if ([v.ledger, v.config, v.redis].filter(Boolean).length > 1)
    throw new UsageError('use only one of --ledger, --config, --redis');
  if (v.redis) return new RedisStreamLedger({ url: v.redis, ...writerDefaults });
  if (v.config) {
    const config = loadConfig(v.config);
    if (!config.redis?.url && !existsSync(config.ledger.path))
      throw new UsageError(`no ledger at ${config.ledger.path} (ledger.path in ${v.config})`);
    return openLedger(config, { readonly: true });
  }
  const path = v.ledger ?? DEFAULT_LEDGER_PATH;
  if (!existsSync(path)) throw new UsageError(`no ledger at ${path}`);
  return new SqliteLedger({ path, retentionDays: DEFAULT_LEDGER_RETENTION_DAYS, ...writerDefaults, readonly: true });
}

export function queryFromArgs(v: Values, now = Date.now()): { query: ReportQuery; format: ReportFormat } {
  const groupBy = (v['group-by'] ?? 'tenant') as GroupBy;
  if (!GROUP_BY.includes(groupBy)) throw new UsageError(`--group-by must be one of ${GROUP_BY.join(', ')}`);
  const format = (v.format ?? 'md') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) throw new UsageError(`--format must be one of ${REPORT_FORMATS.join(', ')}`);
  const query: ReportQuery = { groupBy };
  try {
    if (v.since) query.since = parseTime(v.since, now);
    if (v.until) query.until = parseTime(v.until, now);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (v.tenant) query.tenant = v.tenant;
  if (v.top !== undefined) {
    const n = Number(v.top);
    if (!Number.isInteger(n) || n < 0) throw new UsageError('--top must be a non-negative integer');
    query.top = n;
  }
  return { query, format };
}

export async function run(argv: string[]): Promise<number> {
  let v: Values;
  let ledger: UsageLedger | undefined;
  try {
    ({ values: v } = parseArgs({ args: argv, options: OPTIONS, strict: true }));
    const { query, format } = queryFromArgs(v);
    ledger = openFromArgs(v);
    const text = await produceReport(ledger, query, format);
    if (v.out) {
      writeFileSync(v.out, text);
      process.stderr.write(`ctxgate report: wrote ${v.out}\n`);
    } else {
      process.stdout.write(text);
    }
    return 0;
  } catch (err) {
    const usage =
      err instanceof UsageError ||
      err instanceof ConfigError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(
      `ctxgate report: ${(err as Error).message}\n${usage && !(err instanceof ConfigError) ? `\n${help}\n` : ''}`,
    );
    return usage ? 2 : 1;
  } finally {
    await ledger?.close();
  }
}
