// bench chaos's memory readings: RSS split by kind of mapping from smaps (the main malloc arena,
// glibc's other arenas on their 64 MiB boundaries, other anonymous memory, files), and the gateway's
// gc log line read back with each render thread's heap. A real gateway process (qwen3 on one render
// thread, started as deployed plus --expose-gc) answers a reading with its thread's own figures, and
// that thread's young generation is its own size, not the event loop's flag.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { RENDER_THREAD_YOUNG_MB } from '../../gateway/workers-pool/thread-heap.ts';
import { gcReading, startGatewayProc } from '../../loadtest/chaos/gateway-proc.ts';
import { procMemory, smapsBreakdown } from '../../loadtest/chaos/proc-memory.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-chaos-mem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mapping = (range: string, perms: string, path: string, rssKb: number): string =>
  [
    `${range} ${perms} 00000000 00:00 0${path ? `                          ${path}` : ''}`,
    `Size:               ${rssKb * 2} kB`,
    `Rss:                ${rssKb} kB`,
    'Anonymous:          0 kB',
    'VmFlags: rd wr mr mw me ac sd',
  ].join('\n');

it('splits smaps into brk, 64 MiB-aligned arenas, other anonymous memory and files', () => {
  const smaps = [
    mapping('55d0c6a00000-55d0c6a2d000', 'r-xp', '/usr/bin/node', 1024),
    mapping('55d0c8000000-55d0c9000000', 'rw-p', '[heap]', 2048),
    // a glibc arena heap: read-write part at a 64 MiB boundary, then its reserved rest
    mapping('7f1c04000000-7f1c06000000', 'rw-p', '', 4096),
    mapping('7f1c06000000-7f1c08000000', '---p', '', 0),
    // PROT_NONE at a 64 MiB boundary is a reservation, not an arena
    mapping('7f1c08000000-7f1c0c000000', '---p', '', 0),
    // anonymous, not on the boundary: V8 pages, big malloc chunks, stacks
    mapping('7f1c0c040000-7f1c0c080000', 'rw-p', '', 256),
    mapping('7ffd1c000000-7ffd1c021000', 'rw-p', '[stack]', 100),
    mapping('7f1c10000000-7f1c10001000', 'r--p', '/tmp/x/usage.sqlite', 4),
  ].join('\n');
  const b = smapsBreakdown(smaps);
  expect(b).toEqual({ rss: 7.4, brk: 2, arenas: 4, arenaCount: 1, anon: 0.3, file: 1 });
});

it('reads a gc log line back with its threads, and nothing else as one', () => {
  const line = JSON.stringify({
    level: 30,
    memory: { rss: 300 * 2 ** 20, heapUsed: 50 * 2 ** 20, heapTotal: 60 * 2 ** 20, external: 2 ** 20, arrayBuffers: 0 },
    spaces: { new_space: 0.8, old_space: 40 },
    threads: [{ threadId: 2, heapUsed: 18.5, heapTotal: 20.7, newSpace: 0.8 }],
    msg: 'gc',
  });
  const m = gcReading(line)!;
  expect(m.heapUsed).toBe(50);
  expect(m.newSpace).toBe(0.8);
  expect(m.threads?.[0].threadId).toBe(2);
  expect(gcReading('{"level":30,"msg":"ctxgate listening"}')).toBeUndefined();
  expect(gcReading('"memory": not json')).toBeUndefined();
});

it('a gateway with a render thread reports that thread, and its mappings add up', async () => {
  const cfg = join(dir, 'gw.yaml');
  writeFileSync(
    cfg,
    [
      'listen: { host: 127.0.0.1, port: 0 }',
      'health: { interval_ms: 0 }',
      'render_pool: { threads: 1, nice: 0 }',
      `ledger: { path: '${join(dir, 'usage.sqlite')}' }`,
      'models:',
      '  - { name: m, layout: ctxgate, tokenizer: qwen3, policy: round_robin, workers: [{ url: "http://127.0.0.1:9", id: w0 }] }',
      '',
    ].join('\n'),
  );
  const gw = await startGatewayProc(cfg);
  try {
    const m = await gw.gcMemory();
    expect(m?.threads).toHaveLength(1);
    const t = m!.threads![0];
    expect(t.heapUsed).toBeGreaterThan(1);
    expect(t.heapUsed).toBeLessThanOrEqual(t.heapTotal);
    // the process runs with --max-semi-space-size=64 (the event loop's); its render thread
    // loaded qwen3, which fills a young generation, yet holds no more than its own cap
    expect(t.newSpace).toBeLessThanOrEqual(RENDER_THREAD_YOUNG_MB);
    const p = procMemory(gw.pid)!;
    expect(p.rss).toBeGreaterThan(0);
    expect(Math.abs(p.brk + p.arenas + p.anon + p.file - p.rss)).toBeLessThan(0.5);
    // the main thread and the render thread at least, both named by Node
    const threads = Object.values(p.threads).reduce((a, b) => a + b, 0);
    expect(threads).toBeGreaterThanOrEqual(2);
  } finally {
    await gw.stop();
  }
}, 240_000);
