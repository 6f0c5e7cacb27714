// The retention tests' yardstick: the heap a fill leaves held after full collections, and what the
// same big texts held through views would (slices of 13+ characters keep their whole text alive
// in V8), measured in the same process. A test then asserts its fill holds a small share of that,
// not an absolute number of MB that depends on the V8 version (the engines field allows 20/22/24).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap (MB) still held after `fill` and two full collections. */
export function retainedMb(fill: () => void): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  fill();
  gc();
  gc();
  return (process.memoryUsage().heapUsed - before) / 1e6;
}

/** Heap (MB) still held after the async `fill` and two full collections. */
export async function retainedMbAfter(fill: () => Promise<void>): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  await fill();
  gc();
  gc();
  return (process.memoryUsage().heapUsed - before) / 1e6;
}

/** What `count` 20-character slices of `text(i)` held as plain views retain (MB); released after. */
export function viewsHeldMb(count: number, text: (i: number) => string): number {
  const views: string[] = [];
  const mb = retainedMb(() => {
    for (let i = 0; i < count; i++) views.push(text(i).slice(3, 23));
  });
  views.length = 0;
  return mb;
}
