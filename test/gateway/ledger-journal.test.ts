// The SQLite ledger's journal: records left uncommitted by a crash are committed by the next
// writer, exactly once (also when the crash fell between a commit and the journal's truncation);
// a torn last line is skipped; a clean close leaves the journal empty. The crashes are real: a
// child process appends the records and kills itself with SIGKILL.
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JOURNAL_SUFFIX, Journal, pendingLines } from '../../gateway/accounting/stores/journal.ts';
import { rowValues } from '../../gateway/accounting/stores/sqlite-schema.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { until } from '../helpers/until.ts';
import { usageRecord } from '../helpers/usage.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-journal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SQLITE_LEDGER = new URL('../../gateway/accounting/stores/sqlite.ts', import.meta.url).pathname;
const CHILD = `
import { readFileSync } from 'node:fs';
import { SqliteLedger } from '${SQLITE_LEDGER}';
const l = new SqliteLedger({ path: process.argv[2], retentionDays: 36500, batchSize: 100000, flushMs: 600000 });
for (const r of JSON.parse(readFileSync(process.argv[3], 'utf8'))) l.append(r);
process.kill(process.pid, 'SIGKILL');
`;

/** A writer process that appends these records (journaled, none committed) and dies of kill -9. */
function killedWriter(path: string, records: UsageRecord[]): void {
  const script = join(dir, 'writer.mts');
  const input = `${path}.records.json`;
  writeFileSync(script, CHILD);
  writeFileSync(input, JSON.stringify(records));
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, path, input], { encoding: 'utf8' });
  if (r.signal !== 'SIGKILL') throw new Error(`writer did not die of SIGKILL: ${r.status} ${r.stderr}`);
}

function journalLines(path: string): number {
  return readFileSync(path + JOURNAL_SUFFIX, 'utf8')
    .split('\n')
    .filter(Boolean).length;
}

function rec(i: number): UsageRecord {
  return usageRecord(i, { time: 1_700_000_000_000 + i, promptTokens: 1000 + i, cachedTokens: 500 });
}

/** flush_ms and batch_size beyond the test: nothing reaches SQLite unless flushed or replayed. */
const lazy = (path: string) => ({ path, retentionDays: 36500, batchSize: 100_000, flushMs: 600_000 });

async function rows(path: string): Promise<UsageRecord[]> {
  const l = new SqliteLedger(lazy(path));
  const out: UsageRecord[] = [];
  for await (const r of l.query()) out.push(r);
  await l.close();
  return out;
}

describe('SQLite ledger journal', () => {
  it('a writer that died with records queued: the next writer commits them, once', async () => {
    const path = join(dir, 'crash.sqlite');
    const sent = Array.from({ length: 7 }, (_, i) => rec(i));
    killedWriter(path, sent);
    expect(journalLines(path)).toBe(7); // nothing committed: the journal alone holds them
    const saved = join(dir, 'crash.journal-copy');
    copyFileSync(path + JOURNAL_SUFFIX, saved);
    const got = await rows(path);
    expect(got).toEqual(sent);
    expect(statSync(path + JOURNAL_SUFFIX).size).toBe(0);
    // A crash between that commit and the truncation: the same lines again are not replayed twice.
    copyFileSync(saved, path + JOURNAL_SUFFIX);
    expect(await rows(path)).toHaveLength(7);
  });

  it('commits in batches, empties the journal once all are committed, keeps order across restarts', async () => {
    const path = join(dir, 'batches.sqlite');
    const a = new SqliteLedger({ ...lazy(path), batchSize: 4 });
    for (let i = 0; i < 3; i++) a.append(rec(i));
    await new Promise((r) => setTimeout(r, 20));
    expect(a.count()).toBe(0); // below batch_size: waits for flush_ms, durable in the journal meanwhile
    expect(
      readFileSync(path + JOURNAL_SUFFIX, 'utf8')
        .split('\n')
        .filter(Boolean),
    ).toHaveLength(3);
    a.append(rec(3));
    await until(() => a.count() === 4);
    expect(statSync(path + JOURNAL_SUFFIX).size).toBe(0);
    for (let i = 4; i < 10; i++) a.append(rec(i));
    await a.close();
    expect(statSync(path + JOURNAL_SUFFIX).size).toBe(0);
    const b = new SqliteLedger(lazy(path));
    b.append(rec(10));
    await b.close();
    expect((await rows(path)).map((r) => r.requestId)).toEqual(Array.from({ length: 11 }, (_, i) => `r${i}`));
  });

  it('a second writer while the first lives neither replays nor truncates its journal (no duplicates)', async () => {
    const path = join(dir, 'two.sqlite');
    const a = new SqliteLedger(lazy(path));
    for (let i = 0; i < 3; i++) a.append(rec(i));
    const b = new SqliteLedger(lazy(path));
    expect(b.count()).toBe(0);
    b.append(rec(3));
    await b.close();
    expect(
      readFileSync(path + JOURNAL_SUFFIX, 'utf8')
        .split('\n')
        .filter(Boolean),
    ).toHaveLength(3);
    await a.close();
    expect((await rows(path)).map((r) => r.requestId).sort()).toEqual(['r0', 'r1', 'r2', 'r3']);
  });

  it('a journal of another schema does not stop the ledger from opening; its lines are kept aside', async () => {
    const path = join(dir, 'schema.sqlite');
    await new SqliteLedger(lazy(path)).close();
    writeFileSync(path + JOURNAL_SUFFIX, JSON.stringify(['old', 1, 1, 'r', 't']) + '\n');
    const errors: unknown[] = [];
    const l = new SqliteLedger({ ...lazy(path), onError: (e) => errors.push(e) });
    expect(errors).toHaveLength(1);
    expect(l.count()).toBe(0);
    expect(readdirSync(dir).some((f) => f.startsWith('schema.sqlite.pending.unreplayed-'))).toBe(true);
    await l.close();
  });

  it('skips a torn last line and lines a commit already covers', () => {
    const line = (boot: string, seq: number) => JSON.stringify([boot, seq, 'x']);
    const text = [line('a', 1), line('a', 2), line('a', 3), line('b', 1), '["a",4,"x'].join('\n');
    expect(pendingLines(text, 'a:2').map((l) => `${l.boot}:${l.seq}`)).toEqual(['a:3', 'b:1']);
    expect(pendingLines(text, undefined)).toHaveLength(4);
    expect(pendingLines('', 'a:9')).toEqual([]);
  });

  it('a journal line torn by the crash does not stop the others from being committed', async () => {
    const path = join(dir, 'torn.sqlite');
    killedWriter(
      path,
      [0, 1, 2].map((i) => rec(i)),
    );
    writeFileSync(path + JOURNAL_SUFFIX, readFileSync(path + JOURNAL_SUFFIX, 'utf8') + '["x",1,"to', { flag: 'w' });
    expect((await rows(path)).map((r) => r.requestId)).toEqual(['r0', 'r1', 'r2']);
  });

  // A pid in a lock file cannot tell a dead writer: in a container the restarted gateway is PID 1
  // again (the lock names its own pid), and elsewhere the dead writer's pid may be reused.
  for (const [name, pid] of [
    ['restarted with the same pid (container PID 1)', process.pid],
    ['its pid reused by a live process', 1],
  ] as const)
    it(`a writer killed with -9, then ${name}: the next writer replays its records`, async () => {
      const path = join(dir, `pid-${pid}.sqlite`);
      const sent = Array.from({ length: 5 }, (_, i) => rec(i));
      killedWriter(path, sent);
      expect(journalLines(path)).toBe(5);
      writeFileSync(path + JOURNAL_SUFFIX + '.lock', String(pid)); // what a pid-file lock would have left
      expect((await rows(path)).map((r) => r.requestId)).toEqual(sent.map((r) => r.requestId));
      expect(journalLines(path)).toBe(0);
      // and the restarted writer journals again (a second one in this process does not)
      const again = new SqliteLedger(lazy(path));
      again.append(rec(5));
      expect(journalLines(path)).toBe(1);
      const second = new SqliteLedger(lazy(path));
      second.append(rec(6));
      expect(journalLines(path)).toBe(1);
      await second.close();
      await again.close();
      expect(await rows(path)).toHaveLength(7);
    });

  // A commit SQLite refuses (another connection holds the write lock past the busy timeout: a
  // backup, a `sqlite3` shell, a second writer) keeps the batch and its journal lines.
  for (const after of ['retried at the next flush', 'replayed by the next start'] as const)
    it(`a failed commit loses nothing: ${after}, exactly once`, async () => {
      const path = join(dir, `busy-${after.length}.sqlite`);
      const errors: unknown[] = [];
      const l = new SqliteLedger({ ...lazy(path), onError: (e) => errors.push(e) });
      const sent = Array.from({ length: 5 }, (_, i) => rec(i));
      for (const r of sent) l.append(r);
      const other = new Database(path, { timeout: 0 });
      other.exec('BEGIN IMMEDIATE');
      l.db.pragma('busy_timeout = 50');
      await l.flush();
      expect(String(errors[0])).toMatch(/locked|busy/i);
      expect(l.stats()).toMatchObject({ dropped: 0, queued: 5 });
      expect(journalLines(path)).toBe(5);
      other.exec('ROLLBACK');
      other.close();
      if (after === 'retried at the next flush') {
        await l.flush();
        expect(l.count()).toBe(5);
        expect(journalLines(path)).toBe(0);
        await l.close();
      } else {
        // the batch still fails when the writer goes away (as a crash would leave it)
        const again = new Database(path, { timeout: 0 });
        again.exec('BEGIN IMMEDIATE');
        await l.close();
        again.exec('ROLLBACK');
        again.close();
        expect(journalLines(path)).toBe(5);
      }
      expect((await rows(path)).map((r) => r.requestId)).toEqual(sent.map((r) => r.requestId));
      expect(await rows(path)).toHaveLength(5);
    });

  it('a line is the JSON of [boot, seq, ...the row values in column order], byte for byte', () => {
    const path = join(dir, 'lines.db');
    const j = new Journal(path + JOURNAL_SUFFIX, { release() {} });
    // nulls, quotes, non-ASCII, floats, a failure: every kind of value a row holds
    const recs = [
      rec(1),
      usageRecord(2, {
        model: 'm "q"\u00e9\n',
        ttftMs: 1.25,
        status: 503,
        errorCode: 'upstream_503',
        usageReported: false,
      }),
      usageRecord(3, { predictedCachedTokens: 700, breakCause: 'tool_output', prefillMs: 3.5, decodeMs: 0.1 }),
    ];
    const expected: string[] = [];
    for (const r of recs) {
      const values = rowValues(r);
      const seq = j.append(values);
      expected.push(JSON.stringify([j.boot, seq, ...values]));
    }
    expect(j.append([])).toBe(4);
    expected.push(JSON.stringify([j.boot, 4]));
    expect(readFileSync(path + JOURNAL_SUFFIX, 'utf8')).toBe(`${expected.join('\n')}\n`);
    j.close();
  });
});
