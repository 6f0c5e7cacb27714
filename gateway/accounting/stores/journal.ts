// Write-ahead journal of the SQLite ledger: each accepted record is appended as one line with one
// synchronous write (a few µs), so a process killed with -9 right after answering loses nothing,
// while SQLite gets records in batches (a commit per request cost ~0.1 ms of CPU on the proxy
// path). Lines are `[boot, seq, ...row values]`; the batch that commits seq N also stores
// `boot:N` in the ledger's meta table (same transaction), and once every journaled record is
// committed the file is truncated. On open a writer replays the lines a crash left behind that
// meta does not cover (a crash between commit and truncation replays nothing twice), then
// truncates. One journal per ledger file: an OS lock keeps a second writer (another process, or
// another ledger in this one) from replaying or truncating the owner's lines; that writer runs
// without a journal (each batch committed right after its job). The lock is an exclusive SQLite
// transaction on a side file (`.lockdb`), held by an open connection: the kernel drops it when
// the process dies, however it dies, so a restart always replays. (A pid file cannot tell: in a
// container the gateway is PID 1 in every incarnation, and pids are reused.)
// O(1) per record; replay O(lines left).
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';

export const JOURNAL_SUFFIX = '.pending';
export const JOURNAL_META_KEY = 'journal_seq';

export interface JournalLine {
  boot: string;
  seq: number;
  values: (string | number | null)[];
}

/** Journal lines not covered by `committed` (`boot:seq` from meta); a torn last line is skipped. */
export function pendingLines(text: string, committed: string | undefined): JournalLine[] {
  const [cBoot, cSeq] = committed
    ? [committed.slice(0, committed.lastIndexOf(':')), Number(committed.slice(committed.lastIndexOf(':') + 1))]
    : ['', 0];
  const out: JournalLine[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      continue; // torn by a crash mid-write: that record was never answered as recorded
    }
    if (!Array.isArray(v) || typeof v[0] !== 'string' || typeof v[1] !== 'number') continue;
    if (v[0] === cBoot && v[1] <= cSeq) continue;
    out.push({ boot: v[0], seq: v[1], values: v.slice(2) as JournalLine['values'] });
  }
  return out;
}

export const JOURNAL_LOCK_SUFFIX = '.lockdb';

export interface JournalLock {
  release(): void;
}

/** Takes the journal's lock; null when another writer (in this process or another) holds it. */
export function lockJournal(path: string): JournalLock | null {
  let db: Database.Database | undefined;
  try {
    db = new Database(path + JOURNAL_LOCK_SUFFIX, { timeout: 0 });
    db.exec('BEGIN EXCLUSIVE'); // SQLITE_BUSY while any other connection holds it
  } catch {
    db?.close();
    return null;
  }
  const held = db;
  return {
    release: () => {
      if (held.open) held.close();
    },
  };
}

export class Journal {
  readonly boot = randomBytes(6).toString('hex');
  /** Every line's opening: `["<boot>",`. */
  private readonly head = `[${JSON.stringify(this.boot)},`;
  private fd: number;
  private seq = 0;
  /** Records journaled and not yet committed (or dropped). */
  private open = 0;

  constructor(
    readonly path: string,
    private readonly lock: JournalLock,
  ) {
    this.fd = openSync(path, 'a', 0o600);
  }

  static read(path: string): string {
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  }

  /** Appends one record's row values; returns its sequence number. */
  append(values: readonly (string | number | null)[]): number {
    const seq = ++this.seq;
    // The bytes of JSON.stringify([boot, seq, ...values]) without building that array: the boot id
    // is hex (no escapes), seq an integer, and the values' own array text minus its '['.
    const line = values.length
      ? `${this.head}${seq},${JSON.stringify(values).slice(1)}\n`
      : `${JSON.stringify([this.boot, seq])}\n`;
    writeSync(this.fd, line);
    this.open++;
    return seq;
  }

  /** `n` records were committed (or dropped); truncates once none is left open. */
  settled(n: number): void {
    this.open = Math.max(0, this.open - n);
    if (this.open === 0) ftruncateSync(this.fd, 0);
  }

  /** The meta value the batch ending at `seq` commits. */
  mark(seq: number): string {
    return `${this.boot}:${seq}`;
  }

  close(): void {
    closeSync(this.fd);
    this.lock.release();
  }
}
