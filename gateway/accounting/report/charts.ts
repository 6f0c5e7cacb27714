// Small pure SVG chart helpers (line, bar, stacked bar, histogram) returning self-contained SVG
// strings: no fonts, scripts or network. Used by the HTML report and by the demo's comparison
// report. Each chart has a <title> (accessible name) and per-mark <title> tooltips.
// O(points) per chart. Layout constants are named below.

export const CHART_WIDTH = 640;
export const CHART_HEIGHT = 240;
const PAD = { top: 28, right: 16, bottom: 42, left: 64 };
export const PALETTE = ['#2563eb', '#16a34a', '#f59e0b', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d'];

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const f = (x: number): string => (Math.round(x * 10) / 10).toString();

export interface ChartBase {
  title: string;
  width?: number;
  height?: number;
  /** Formats y values on the axis and in tooltips. */
  yFormat?: (v: number) => string;
}

interface Frame {
  w: number;
  h: number;
  plotW: number;
  plotH: number;
  yMax: number;
  y(v: number): number;
  fmt: (v: number) => string;
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function frame(c: ChartBase, maxValue: number, fixedMax?: number): Frame {
  const w = c.width ?? CHART_WIDTH;
  const h = c.height ?? CHART_HEIGHT;
  const plotW = w - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const yMax = fixedMax ?? niceMax(maxValue);
  const fmt =
    c.yFormat ??
    ((v: number) =>
      Math.abs(v) >= 1000 ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : String(Number(v.toPrecision(3))));
  return { w, h, plotW, plotH, yMax, y: (v) => PAD.top + plotH - (Math.max(0, v) / yMax) * plotH, fmt };
}

function open(fr: Frame, c: ChartBase, kind: string): string {
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((t) => {
      const v = fr.yMax * t;
      const y = f(fr.y(v));
      return `<line class="grid" x1="${PAD.left}" x2="${PAD.left + fr.plotW}" y1="${y}" y2="${y}" stroke="#e5e7eb"/><text x="${PAD.left - 6}" y="${y}" dy="0.32em" text-anchor="end" font-size="10" fill="#6b7280">${esc(fr.fmt(v))}</text>`;
    })
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="ctx-chart ctx-${kind}" role="img" viewBox="0 0 ${fr.w} ${fr.h}" width="${fr.w}" height="${fr.h}" font-family="system-ui, sans-serif">` +
    `<title>${esc(c.title)}</title><text class="chart-title" x="${PAD.left}" y="16" font-size="13" font-weight="600" fill="#111827">${esc(c.title)}</text>${ticks}`
  );
}

function xLabels(labels: string[], x: (i: number) => number, h: number): string {
  const every = Math.max(1, Math.ceil(labels.length / 8));
  return labels
    .map((l, i) =>
      i % every === 0
        ? `<text x="${f(x(i))}" y="${h - PAD.bottom + 14}" text-anchor="middle" font-size="10" fill="#6b7280">${esc(l)}</text>`
        : '',
    )
    .join('');
}

function legend(names: { name: string; color: string }[], h: number): string {
  let x = PAD.left;
  return names
    .map(({ name, color }) => {
      const s = `<rect x="${x}" y="${h - 14}" width="10" height="10" fill="${color}"/><text x="${x + 14}" y="${h - 5}" font-size="10" fill="#374151">${esc(name)}</text>`;
      x += 24 + name.length * 6;
      return s;
    })
    .join('');
}

export interface LineSeries {
  name: string;
  values: (number | null)[];
  color?: string;
}

/** Lines over shared x labels; null values break the line. */
export function lineChart(c: ChartBase & { labels: string[]; series: LineSeries[]; yMax?: number }): string {
  const max = c.series.reduce((m, s) => s.values.reduce<number>((a, v) => (v !== null && v > a ? v : a), m), 0);
  const fr = frame(c, max, c.yMax);
  const n = Math.max(1, c.labels.length - 1);
  const x = (i: number): number => PAD.left + (c.labels.length === 1 ? fr.plotW / 2 : (i / n) * fr.plotW);
  const paths = c.series
    .map((s, si) => {
      const color = s.color ?? PALETTE[si % PALETTE.length];
      let d = '';
      let pen = false;
      const dots: string[] = [];
      s.values.forEach((v, i) => {
        if (v === null) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${f(x(i))},${f(fr.y(v))}`;
        pen = true;
        dots.push(
          `<circle class="dot" cx="${f(x(i))}" cy="${f(fr.y(v))}" r="2.5" fill="${color}"><title>${esc(`${c.labels[i]}: ${fr.fmt(v)}`)}</title></circle>`,
        );
      });
      return `<path class="line" d="${d || 'M0,0'}" fill="none" stroke="${color}" stroke-width="2"><title>${esc(s.name)}</title></path>${dots.length <= 200 ? dots.join('') : ''}`;
    })
    .join('');
  const leg = legend(
    c.series.map((s, i) => ({ name: s.name, color: s.color ?? PALETTE[i % PALETTE.length] })),
    fr.h,
  );
  return open(fr, c, 'line') + paths + xLabels(c.labels, x, fr.h) + leg + '</svg>';
}

export interface Bar {
  label: string;
  value: number;
  color?: string;
}

/** Vertical bars, one per label. */
export function barChart(c: ChartBase & { bars: Bar[] }): string {
  const fr = frame(
    c,
    c.bars.reduce((a, b) => Math.max(a, b.value), 0),
  );
  const slot = fr.plotW / Math.max(1, c.bars.length);
  const bw = Math.max(1, slot * 0.8);
  const x = (i: number): number => PAD.left + slot * i + slot / 2;
  const rects = c.bars
    .map((b, i) => {
      const y = fr.y(b.value);
      return `<rect class="bar" x="${f(x(i) - bw / 2)}" y="${f(y)}" width="${f(bw)}" height="${f(PAD.top + fr.plotH - y)}" fill="${b.color ?? PALETTE[0]}"><title>${esc(`${b.label}: ${fr.fmt(b.value)}`)}</title></rect>`;
    })
    .join('');
  return (
    open(fr, c, 'bar') +
    rects +
    xLabels(
      c.bars.map((b) => b.label),
      x,
      fr.h,
    ) +
    '</svg>'
  );
}

export interface Stack {
  name: string;
  values: number[];
  color?: string;
}

/** Bars stacked bottom-up in `stacks` order, one bar per label. */
export function stackedBarChart(c: ChartBase & { labels: string[]; stacks: Stack[] }): string {
  const totals = c.labels.map((_, i) => c.stacks.reduce((a, s) => a + Math.max(0, s.values[i] ?? 0), 0));
  const fr = frame(
    c,
    totals.reduce((a, v) => Math.max(a, v), 0),
  );
  const slot = fr.plotW / Math.max(1, c.labels.length);
  const bw = Math.max(1, slot * 0.8);
  const x = (i: number): number => PAD.left + slot * i + slot / 2;
  let rects = '';
  c.labels.forEach((label, i) => {
    let acc = 0;
    c.stacks.forEach((s, si) => {
      const v = Math.max(0, s.values[i] ?? 0);
      if (v === 0) return;
      const y0 = fr.y(acc);
      const y1 = fr.y(acc + v);
      acc += v;
      rects += `<rect class="bar seg" x="${f(x(i) - bw / 2)}" y="${f(y1)}" width="${f(bw)}" height="${f(Math.max(0.5, y0 - y1))}" fill="${s.color ?? PALETTE[si % PALETTE.length]}"><title>${esc(`${label} · ${s.name}: ${fr.fmt(v)}`)}</title></rect>`;
    });
  });
  const leg = legend(
    c.stacks.map((s, i) => ({ name: s.name, color: s.color ?? PALETTE[i % PALETTE.length] })),
    fr.h,
  );
  return open(fr, c, 'stacked') + rects + xLabels(c.labels, x, fr.h) + leg + '</svg>';
}

/** Histogram over bucket edges: counts[i] covers [edges[i], edges[i+1]); the last bucket is open. */
export function histogram(c: ChartBase & { edges: number[]; counts: number[]; unit?: string }): string {
  const u = c.unit ?? '';
  const bars = c.counts.map((n, i) => ({
    label: i + 1 < c.edges.length ? `${c.edges[i]}–${c.edges[i + 1]}${u}` : `≥${c.edges[i]}${u}`,
    value: n,
    color: PALETTE[5],
  }));
  return barChart({ ...c, bars }).replace('ctx-bar', 'ctx-histogram');
}
