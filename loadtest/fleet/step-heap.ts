// A binary min-heap of (time, integer) pairs: the fleet simulator's step ends (time, worker) and
// its other timed events (the client model's timers and resends: time, index). Ties break on the
// integer, so equal times pop in a fixed order. O(log n) push and pop.

export class StepHeap {
  private readonly t: number[] = [];
  private readonly w: number[] = [];

  get size(): number {
    return this.t.length;
  }

  peekTime(): number {
    return this.t.length ? this.t[0] : Infinity;
  }

  push(time: number, worker: number): void {
    const t = this.t;
    const w = this.w;
    let i = t.length;
    t.push(time);
    w.push(worker);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (t[p] < time || (t[p] === time && w[p] <= worker)) break;
      t[i] = t[p];
      w[i] = w[p];
      i = p;
    }
    t[i] = time;
    w[i] = worker;
  }

  pop(): [number, number] {
    const t = this.t;
    const w = this.w;
    const top: [number, number] = [t[0], w[0]];
    const lt = t.pop()!;
    const lw = w.pop()!;
    const n = t.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && (t[r] < t[l] || (t[r] === t[l] && w[r] < w[l])) ? r : l;
        if (t[c] > lt || (t[c] === lt && w[c] >= lw)) break;
        t[i] = t[c];
        w[i] = w[c];
        i = c;
      }
      t[i] = lt;
      w[i] = lw;
    }
    return top;
  }
}
