// The HTML report is one self-contained file: rendered from disk (file://) in headless Chromium
// with every network request blocked, it shows its charts. Screenshot: test-artifacts/report.png.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregateRecords } from '../../gateway/accounting/report/aggregate.ts';
import { barChart, histogram, lineChart, stackedBarChart } from '../../gateway/accounting/report/charts.ts';
import { renderHtmlReport } from '../../gateway/accounting/report/html.ts';
import { compilePricing, DEFAULT_PRICING_TABLE } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord } from '../../gateway/accounting/record/record.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-report-html-'));
let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function reportHtml(): Promise<string> {
  const pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'default');
  const t0 = Date.UTC(2026, 4, 1);
  const recs = Array.from({ length: 400 }, (_, i) =>
    buildUsageRecord(
      {
        time: t0 + i * 90_000,
        requestId: `r${i}`,
        tenant: ['a', 'b'][i % 2],
        keyId: 'k',
        sessionId: `session-${i % 13}`,
        model: 'm',
        worker: `w${i % 3}`,
        status: 200,
        stream: true,
        promptTokens: 8000,
        cachedTokens: Math.min(8000, 500 + i * 30),
        predictedCachedTokens: Math.min(8000, i * 32),
        outputTokens: 200,
        usageReported: true,
        ttftMs: 40 + ((i * 131) % 3000),
        totalMs: 4000,
        gatewayOverheadMs: 0.3,
        attempts: 1,
        breakCause:
          i % 9 === 0
            ? ['tool_schema_changed', 'system_prompt_changed', 'history_rewritten'][Math.floor(i / 9) % 3]
            : undefined,
      },
      pricing,
    ),
  );
  return renderHtmlReport(await aggregateRecords(recs, { groupBy: 'tenant' }), { title: 'ctxgate usage <test>' });
}

describe('HTML report', () => {
  it('is self-contained: no external URLs in the markup', async () => {
    const html = await reportHtml();
    expect(html).not.toMatch(/(src|href)\s*=\s*["'](https?:)?\/\//i);
    expect(html).not.toMatch(/@import|url\(\s*["']?https?:/i);
    expect(html).toContain('ctxgate usage &lt;test&gt;'); // titles are escaped
  });

  it('renders its charts in headless Chromium with the network blocked', async () => {
    const file = join(dir, 'report.html');
    writeFileSync(file, await reportHtml());
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const external: string[] = [];
    await page.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith('file:')) return route.continue();
      external.push(u);
      return route.abort();
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(file).href);

    const charts = await page.$$eval('svg.ctx-chart', (svgs) =>
      svgs.map((s) => ({
        title: s.querySelector('title')?.textContent ?? '',
        bars: s.querySelectorAll('rect.bar').length,
        paths: s.querySelectorAll('path.line').length,
        width: s.getBoundingClientRect().width,
      })),
    );
    const byTitle = (t: string) => charts.find((c) => c.title.startsWith(t));
    expect(byTitle('Prefix-cache hit rate over time')?.paths).toBe(2);
    expect(byTitle('Cost by kind')?.bars).toBeGreaterThan(10);
    expect(byTitle('Time to first token')?.bars).toBe(11);
    expect(byTitle('Top 10 sessions by cost')?.bars).toBe(10);
    expect(byTitle('Cache breaks by cause')?.bars).toBe(3);
    expect(charts.every((c) => c.width > 100)).toBe(true);
    const hitPath = await page.getAttribute('svg.ctx-line path.line', 'd');
    expect(hitPath).toMatch(/^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/);
    expect(await page.textContent('header h1')).toBe('ctxgate usage <test>');
    expect(await page.$$eval('table.sortable tbody tr', (r) => r.length)).toBe(2);

    // The inline script sorts the group table by a clicked column.
    await page.click('table.sortable th:nth-child(2)');
    await page.click('table.sortable th:nth-child(1)');
    const keys = await page.$$eval('table.sortable tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
    expect([...keys].sort()).toEqual(['a', 'b']);

    mkdirSync('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/report.png', fullPage: true });
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('chart helpers', () => {
  it('are pure SVG strings with escaped titles and one mark per value', () => {
    const bar = barChart({
      title: 'a<b',
      bars: [
        { label: 'x', value: 1 },
        { label: 'y', value: 3 },
      ],
    });
    expect(bar.startsWith('<svg')).toBe(true);
    expect(bar).toContain('<title>a&lt;b</title>');
    expect(bar.match(/<rect class="bar"/g)).toHaveLength(2);
    const stacked = stackedBarChart({
      title: 's',
      labels: ['p', 'q'],
      stacks: [
        { name: 'u', values: [1, 2] },
        { name: 'v', values: [0, 5] },
      ],
    });
    expect(stacked.match(/<rect class="bar seg"/g)).toHaveLength(3); // zero segments are skipped
    const line = lineChart({ title: 'l', labels: ['1', '2', '3'], series: [{ name: 's', values: [1, null, 2] }] });
    expect(line).toMatch(/d="M[\d.]+,[\d.]+M[\d.]+,[\d.]+"/); // null breaks the line
    const hist = histogram({ title: 'h', edges: [0, 10, 20], counts: [1, 2, 3], unit: 'ms' });
    expect(hist).toContain('≥20ms');
    expect(hist).toContain('ctx-histogram');
  });
});
