// Every metric the Grafana dashboard queries exists in the gateway's metrics registry, and the
// dashboard covers the series the issue lists.
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../gateway/metrics.ts';

const dash = JSON.parse(readFileSync('configs/grafana-dashboard.json', 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
  templating: { list: { definition?: string }[] };
};

function exprs(): string[] {
  const out: string[] = [];
  for (const p of dash.panels) for (const t of p.targets ?? []) out.push(t.expr);
  for (const v of dash.templating.list) if (v.definition) out.push(v.definition);
  return out;
}

// Histogram series are queried through their _bucket/_sum/_count children.
const base = (name: string): string => name.replace(/_(bucket|sum|count)$/, '');

describe('Grafana dashboard', () => {
  it('uses only metric names the registry defines', async () => {
    const names = await registryNames();
    expect(names.has('ctxgate_cost_usd_total')).toBe(true);
    const used = new Set(exprs().flatMap((e) => e.match(/\bctxgate_[a-z0-9_]+/g) ?? []));
    expect(used.size).toBeGreaterThan(10);
    const unknown = [...used].filter((n) => !names.has(n) && !names.has(base(n)));
    expect(unknown).toEqual([]);
  });

  it('covers every series the reporting issue lists', () => {
    const text = exprs().join('\n');
    for (const m of [
      'ctxgate_requests_total',
      'ctxgate_ttft_seconds',
      'ctxgate_request_duration_seconds',
      'ctxgate_gateway_overhead_seconds',
      'ctxgate_prompt_tokens_total',
      'ctxgate_cached_tokens_total',
      'ctxgate_predicted_cached_tokens_total',
      'ctxgate_output_tokens_total',
      'ctxgate_cost_usd_total',
      'ctxgate_savings_usd_total',
      'ctxgate_worker_cache_hit_ratio',
      'ctxgate_routing_decisions_total',
      'ctxgate_tombstones_total',
      'ctxgate_compactions_total',
      'ctxgate_cache_breaks_total',
      'ctxgate_usage_records_dropped_total',
    ]) {
      expect(text, m).toContain(m);
    }
  });

  it('the Prometheus example scrapes /metrics', () => {
    const prom = parseYaml(readFileSync('configs/prometheus.yml', 'utf8')) as {
      scrape_configs: { job_name: string; metrics_path: string }[];
    };
    expect(prom.scrape_configs[0]).toMatchObject({ job_name: 'ctxgate', metrics_path: '/metrics' });
  });
});

async function registryNames(): Promise<Set<string>> {
  const registry = new Registry();
  createMetrics(registry);
  return new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
}
