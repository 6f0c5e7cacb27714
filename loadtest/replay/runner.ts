// Replays sessions against one fleet: calls inside a session in order, up to `concurrency`
// sessions at once, optional think time between calls. O(total calls) requests. Where the fleet's
// workers take it, each call carries the answer the agent actually got (the next call's assistant
// turn), so the engines cache what the agent really continues from.
import { Agent } from 'undici';
import { recordedAnswer } from '../formats/recorded-answer.ts';
import type { Session } from '../formats/types.ts';
import { createLosslessTracker } from '../../middleware/lossless/check.ts';
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
  const dispatcher = new Agent({
    connections: Math.max(1, o.concurrency),
    keepAliveTimeout: 10_000,
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  let next = 0;
  const worker = async () => {
    for (;;) {
      const idx = next++;
      if (idx >= sessions.length) return;
      const s = sessions[idx];
      // Lossless check of every call the gateway's pipeline ran, against the session's earlier calls.
      const tracker = createLosslessTracker();
      for (let turn = 0; turn < s.calls.length; turn++) {
        if (turn > 0 && o.thinkMs > 0) await sleep(o.thinkMs);
        const rec = await sendCall(s.calls[turn].body, s.id, turn, {
          url: fleet.url,
          model: fleet.model,
          sessionHeader: o.sessionHeader,
          modeledTtft: o.modeledTtft,
          dispatcher,
          answer: fleet.recordedAnswers ? recordedAnswer(s, turn) : undefined,
        });
        const ex = rec.request_id ? fleet.takeExchange?.(rec.request_id) : undefined;
        if (ex) {
          const r = tracker.check(ex.client, ex.upstream, ex.receipts);
          const samples = r.details
            .filter((d) => d.kind !== 'first_call_changed' || r.first_call_changed)
            .slice(0, 3)
            .map((d) => `${s.id}#${turn} ${d.kind} m${d.message}: ${d.line}`);
          rec.lossless = { missing: r.missing, altered: r.altered, first_call_changed: r.first_call_changed, samples };
        }
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
