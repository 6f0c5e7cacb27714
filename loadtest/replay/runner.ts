// Replays sessions against one fleet: calls inside a session in order, up to `concurrency`
// sessions at once, optional think time between calls. O(total calls) requests.
import { Agent } from 'undici';
import type { Session } from '../formats/types.ts';
import { sendCall } from './client.ts';
import type { CallRecord, FleetHandle } from './types.ts';

export const DEFAULT_CONCURRENCY = 8;

export interface ReplayOptions {
  concurrency: number;
  thinkMs: number;
  /** When set, sent as x-session-id (agents usually send none; 'true' = the session id). */
  sessionHeader?: string;
  modeledTtft: boolean;
  onCall?: (rec: CallRecord) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function replaySessions(sessions: Session[], fleet: FleetHandle, o: ReplayOptions): Promise<CallRecord[]> {
  const records: CallRecord[] = [];
  const dispatcher = new Agent({ connections: Math.max(1, o.concurrency), keepAliveTimeout: 10_000, headersTimeout: 600_000, bodyTimeout: 600_000 });
  let next = 0;
  const worker = async () => {
    for (;;) {
      const idx = next++;
      if (idx >= sessions.length) return;
      const s = sessions[idx];
      for (let turn = 0; turn < s.calls.length; turn++) {
        if (turn > 0 && o.thinkMs > 0) await sleep(o.thinkMs);
        const rec = await sendCall(s.calls[turn].body, s.id, turn, {
          url: fleet.url,
          model: fleet.model,
          sessionHeader: o.sessionHeader,
          modeledTtft: o.modeledTtft,
          dispatcher,
        });
        records.push(rec);
        o.onCall?.(rec);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.concurrency, sessions.length)) }, worker));
  } finally {
    await dispatcher.close();
  }
  return records;
}
