// Bound metric children for the per-call metrics (finish.ts; per attempt: upstream/worker.ts,
// proxy/attempt.ts, proxy/upstream-call.ts): each label tuple's series is found once, then a call
// adds to it directly. prom-client's inc/observe/set build a string from the
// label set on every call (hashObject), check every label name (validateLabel) and, for a gauge's
// set, sort the label keys; its own labels() children still do all of that per call.
// Cost per call: one Map lookup per label value (the strings' hashes are cached by V8) and one
// keyed load to check the series is still the one held. Settings: CHILDREN_MAX (named below).
//
// The series objects are prom-client's (15.1.3, exact-pinned): a child adds to them exactly as
// prom-client does (same arithmetic, same order), so /metrics reads the same bytes after the same
// calls (test/gateway/metrics-children.test.ts compares the two paths). The first call for a tuple,
// any value prom-client would reject or treat specially, and a series replaced or removed since
// (reset, remove, another caller's gauge set) go through prom-client's own method: correct, only
// slower. If a prom-client upgrade changes how it keys series, no series is ever found and every
// call takes that path.
import type { Counter, Gauge, Histogram } from 'prom-client';

/** Children kept per metric; past it a tuple gets an unkept child (prom-client's path each call).
 *  Label values are bounded where the call sites take them (models, tenants, workers, enums). */
export const CHILDREN_MAX = 4096;

/** What a child needs of prom-client's metric object (not in its typings). */
interface Internals<E> {
  hashMap: Record<string, E | undefined>;
  sortedLabelNames: readonly string[];
  labelNames: readonly string[];
}
interface CounterEntry {
  value: number;
}
interface HistogramEntry {
  sum: number;
  count: number;
  bucketValues: Record<string, number>;
}

/** prom-client's series key for a full label set (util.js fastHashObject over sorted names). */
function seriesKey(sorted: readonly string[], labels: Record<string, string>): string {
  let key = '';
  for (const name of sorted) key += `${name}:${labels[name]},`;
  return key;
}

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) labels[names[i]!] = values[i]!;
  return labels;
}

abstract class Child<E> {
  protected map: Record<string, E | undefined> | undefined;
  protected entry: E | undefined;
  protected readonly key: string;

  constructor(
    protected readonly metric: Internals<E>,
    protected readonly labels: Record<string, string>,
  ) {
    this.key = seriesKey(metric.sortedLabelNames, labels);
  }

  /** The held series, when it is still the one prom-client keeps for this tuple. */
  protected held(): E | undefined {
    const map = this.metric.hashMap;
    const e = this.entry;
    return this.map === map && e !== undefined && map[this.key] === e ? e : undefined;
  }

  /** After prom-client's own method ran: hold the series it keeps now. */
  protected hold(): void {
    this.map = this.metric.hashMap;
    this.entry = this.map[this.key];
  }
}

export class CounterChild extends Child<CounterEntry> {
  constructor(
    private readonly counter: Counter<string>,
    labels: Record<string, string>,
  ) {
    super(counter as unknown as Internals<CounterEntry>, labels);
  }

  inc(value = 1): void {
    const e = value >= 0 && Number.isFinite(value) ? this.held() : undefined;
    if (e !== undefined) e.value += value;
    else {
      this.counter.inc(this.labels, value);
      this.hold();
    }
  }
}

export class GaugeChild extends Child<CounterEntry> {
  constructor(
    private readonly gauge: Gauge<string>,
    labels: Record<string, string>,
  ) {
    super(gauge as unknown as Internals<CounterEntry>, labels);
  }

  /** prom-client's set stores a new { value, labels } with equal labels: the same exposition. */
  set(value: number): void {
    const e = typeof value === 'number' ? this.held() : undefined;
    if (e !== undefined) e.value = value;
    else {
      this.gauge.set(this.labels, value);
      this.hold();
    }
  }
}

export class HistogramChild extends Child<HistogramEntry> {
  /** The bucket bounds and the property keys prom-client stores their counts under. */
  private readonly bounds: readonly number[];
  private readonly bucketKeys: readonly string[];

  constructor(
    private readonly histogram: Histogram<string>,
    labels: Record<string, string>,
  ) {
    super(histogram as unknown as Internals<HistogramEntry>, labels);
    this.bounds = (histogram as unknown as { upperBounds: number[] }).upperBounds;
    this.bucketKeys = this.bounds.map(String);
  }

  observe(value: number): void {
    const e = Number.isFinite(value) ? this.held() : undefined;
    if (e === undefined) {
      this.histogram.observe(this.labels, value);
      this.hold();
      return;
    }
    // As prom-client's observe: sum, count, then the first bucket whose bound holds the value.
    e.sum += value;
    e.count += 1;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        e.bucketValues[this.bucketKeys[i]!]! += 1;
        return;
      }
    }
  }
}

type Node<C> = Map<string, Node<C> | C>;

/** A metric's children by label values, in the metric's label order (nested Maps: no key string
 *  is built per call). */
export class Children<C> {
  private readonly root: Node<C> = new Map();
  private size = 0;

  constructor(
    private readonly labelNames: readonly string[],
    private readonly make: (labels: Record<string, string>) => C,
  ) {}

  /** The child for these label values (as many as the metric has labels, in its order). */
  at(a: string, b?: string, c?: string, d?: string): C {
    const depth = this.labelNames.length;
    let node = this.root;
    for (let i = 0; i < depth - 1; i++) {
      const v = (i === 0 ? a : i === 1 ? b : c) as string;
      let next = node.get(v) as Node<C> | undefined;
      if (next === undefined) {
        if (this.size >= CHILDREN_MAX) return this.unkept(a, b, c, d);
        next = new Map();
        node.set(v, next);
      }
      node = next;
    }
    const last = (depth === 1 ? a : depth === 2 ? b : depth === 3 ? c : d) as string;
    let child = node.get(last) as C | undefined;
    if (child === undefined) {
      if (this.size >= CHILDREN_MAX) return this.unkept(a, b, c, d);
      child = this.make(labelsOf(this.labelNames, [a, b ?? '', c ?? '', d ?? '']));
      node.set(last, child);
      this.size++;
    }
    return child;
  }

  private unkept(a: string, b?: string, c?: string, d?: string): C {
    return this.make(labelsOf(this.labelNames, [a, b ?? '', c ?? '', d ?? '']));
  }
}

function namesOf(metric: unknown): readonly string[] {
  return (metric as Internals<unknown>).labelNames;
}

export function counterChildren<L extends string>(counter: Counter<L>): Children<CounterChild> {
  const c = counter as unknown as Counter<string>;
  return new Children(namesOf(c), (l) => new CounterChild(c, l));
}
export function gaugeChildren<L extends string>(gauge: Gauge<L>): Children<GaugeChild> {
  const g = gauge as unknown as Gauge<string>;
  return new Children(namesOf(g), (l) => new GaugeChild(g, l));
}
export function histogramChildren<L extends string>(histogram: Histogram<L>): Children<HistogramChild> {
  const h = histogram as unknown as Histogram<string>;
  return new Children(namesOf(h), (l) => new HistogramChild(h, l));
}
