// bench chaos's RSS change by part: the parts add up to the change in the mappings' RSS, the JS
// heap's change is split into live and committed-but-free, the rest of the anonymous memory is
// what the main heap does not explain, and a trim probe says how much of the malloc heaps was free
// memory glibc kept. Figures from the s40 run `bench chaos --duration-s 60 --redis --trim-probe`.
import { expect, it } from 'vitest';
import type { MemoryMb } from '../../loadtest/chaos/gateway-proc.ts';
import type { ProcMemoryMb } from '../../loadtest/chaos/proc-memory.ts';
import { rssParts, rssPartsLine } from '../../loadtest/chaos/rss-parts.ts';

const memory = (heapUsed: number, heapTotal: number): MemoryMb => ({
  rss: 0,
  heapUsed,
  heapTotal,
  external: 0,
  arrayBuffers: 0,
});
const proc = (brk: number, arenas: number, anon: number, file: number): ProcMemoryMb => ({
  rss: brk + arenas + anon + file,
  brk,
  arenas,
  arenaCount: 12,
  allocator: 'libc',
  anon,
  file,
  threads: { node: 14 },
});

const start = { memory: memory(52.5, 60.4), proc: proc(23.2, 53.5, 284.9, 53.3) };
const end = { memory: memory(57.3, 79.4), proc: proc(26.4, 56.7, 305.2, 53.4) };

it('splits an RSS change into parts that add up to it', () => {
  const d = rssParts(start, end)!;
  expect(d).toEqual({ rss: 26.8, heapUsed: 4.8, heapFree: 14.2, otherAnon: 1.3, malloc: 6.4, file: 0.1 });
  expect(d.heapUsed + d.heapFree + d.otherAnon + d.malloc + d.file).toBeCloseTo(d.rss, 5);
  expect(rssPartsLine(d)).toBe(
    "+26.8 MB = main JS heap live +4.8, main JS heap committed but free +14.2, other anon (render threads' heaps, stacks) +1.3, malloc heaps +6.4, files +0.1",
  );
});

it('says how much of the malloc heaps a trim gave back, and nothing without one', () => {
  const d = rssParts(start, end, proc(22.4, 46.4, 305.1, 53.4))!;
  expect(d.mallocFreeKept).toBe(14.3);
  expect(rssPartsLine(d)).toContain('malloc heaps +6.4 (of the malloc heaps at the end, 14.3 free memory glibc kept)');
  expect(rssParts(start, end)!.mallocFreeKept).toBeUndefined();
});

it('gives no parts when a reading lacks the heap figures or the mappings', () => {
  expect(rssParts({ proc: start.proc }, end)).toBeUndefined();
  expect(rssParts(start, { memory: end.memory })).toBeUndefined();
});
