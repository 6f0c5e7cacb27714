// Local spool for a remote ledger that is unreachable: batches that cannot be written are
// appended to a JSON-lines file (synchronously, so a crash right after keeps them), and forwarded
// once the store is back. Forwarding renames the spool to `<path>.sending` first (atomic), so new
// records spooled meanwhile go to a fresh file, and a `.sending` file left by a crash is sent
// first on the next start. Delivery is at least once: a crash between a forwarded batch being
// acknowledged and the file being removed re-sends that file. O(records) per forward; the file is
// read in full, bounded by the outage's records (about 1 KB each).
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';

export class Spool<T> {
  readonly sendingPath: string;
  private forwarding: Promise<number> | null = null;
  readonly counts = { spooled: 0, forwarded: 0 };

  constructor(readonly path: string) {
    this.sendingPath = `${path}.sending`;
    mkdirSync(dirname(path), { recursive: true });
  }

  append(batch: readonly T[]): void {
    if (batch.length === 0) return;
    appendFileSync(this.path, batch.map((r) => JSON.stringify(r)).join('\n') + '\n', { mode: 0o600 });
    this.counts.spooled += batch.length;
  }

  /** Whether anything waits to be forwarded. */
  pending(): boolean {
    return existsSync(this.sendingPath) || (existsSync(this.path) && statSync(this.path).size > 0);
  }

  /**
   * Sends what is spooled with `send` (in chunks of `chunk`); resolves with how many were sent.
   * A failing send leaves the unsent records spooled and rethrows. One forward at a time.
   */
  forward(send: (batch: T[]) => Promise<void>, chunk: number): Promise<number> {
    this.forwarding ??= this.forwardOnce(send, chunk).finally(() => (this.forwarding = null));
    return this.forwarding;
  }

  private async forwardOnce(send: (batch: T[]) => Promise<void>, chunk: number): Promise<number> {
    let sent = 0;
    for (;;) {
      if (!existsSync(this.sendingPath)) {
        if (!existsSync(this.path)) return sent;
        renameSync(this.path, this.sendingPath);
      }
      const records: T[] = [];
      for (const line of readFileSync(this.sendingPath, 'utf8').split('\n')) {
        if (!line) continue;
        try {
          records.push(JSON.parse(line) as T);
        } catch {
          // A torn last line (crash mid-append) is the only way to get here; it was never acknowledged.
        }
      }
      for (let i = 0; i < records.length; i += chunk) {
        try {
          await send(records.slice(i, i + chunk));
        } catch (err) {
          // Keep what was not sent; it goes out with the next forward.
          const rest = records.slice(i);
          unlinkSync(this.sendingPath);
          this.counts.spooled -= rest.length;
          this.append(rest);
          throw err;
        }
        sent += Math.min(chunk, records.length - i);
        this.counts.forwarded += Math.min(chunk, records.length - i);
      }
      unlinkSync(this.sendingPath);
    }
  }
}
