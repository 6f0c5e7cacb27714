// The local spool of the Redis ledger: a `.sending` file left by a crash is forwarded first, a torn
// last line (crash mid-append) is skipped, and a send failing half-way keeps the unsent records.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Spool } from '../../gateway/accounting/stores/spool.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-spool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ledger spool', () => {
  it('forwards a crash-left .sending file first, skips a torn line, then the live spool', async () => {
    const s = new Spool<{ n: number }>(join(dir, 'a.spool'));
    writeFileSync(s.sendingPath, '{"n":1}\n{"n":2}\n{"n":');
    s.append([{ n: 3 }, { n: 4 }]);
    const got: number[] = [];
    expect(await s.forward(async (b) => void got.push(...b.map((r) => r.n)), 10)).toBe(4);
    expect(got).toEqual([1, 2, 3, 4]);
    expect(s.pending()).toBe(false);
    expect(existsSync(s.sendingPath)).toBe(false);
  });

  it('a send failing half-way keeps exactly the unsent records for the next forward', async () => {
    const s = new Spool<{ n: number }>(join(dir, 'b.spool'));
    s.append(Array.from({ length: 10 }, (_, n) => ({ n })));
    const sent: number[] = [];
    let calls = 0;
    await expect(
      s.forward(async (b) => {
        if (++calls === 2) throw new Error('redis went away');
        sent.push(...b.map((r) => r.n));
      }, 4),
    ).rejects.toThrow('redis went away');
    expect(sent).toEqual([0, 1, 2, 3]);
    expect(s.pending()).toBe(true);
    await s.forward(async (b) => void sent.push(...b.map((r) => r.n)), 4);
    expect(sent).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(s.counts).toEqual({ spooled: 10, forwarded: 10 });
  });
});
