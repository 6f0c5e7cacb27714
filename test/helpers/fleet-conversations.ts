// Small generated Mooncake-format traces for the fleet simulator's tests: conversations over a
// shared root, loaded as the simulator reads them.
import { mulberry32 } from '../../kvplanner/rng.ts';
import {
  arrange,
  ChainInterner,
  fromMooncake,
  type FleetRequest,
  type MooncakeRecord,
} from '../../loadtest/fleet/trace.ts';

/** Conversations over a shared 1-block root: turn k of a session extends turn k−1 by 1–3 blocks. */
export function conversationTrace(sessions: number, turns: number, seed: number, gapMs = 400): MooncakeRecord[] {
  const rnd = mulberry32(seed);
  const out: MooncakeRecord[] = [];
  let nextId = 1;
  for (let s = 0; s < sessions; s++) {
    const ids = [0];
    let t = s * gapMs * 0.7;
    for (let k = 0; k < turns; k++) {
      const grow = 1 + Math.floor(rnd() * 3);
      for (let g = 0; g < grow; g++) ids.push(nextId++);
      const partial = Math.floor(rnd() * 400) + 50;
      out.push({
        timestamp: Math.round(t),
        input_length: (ids.length - 1) * 512 + partial,
        output_length: 20 + Math.floor(rnd() * 200),
        hash_ids: [...ids],
      });
      t += gapMs * (2 + rnd() * 6);
    }
  }
  return out;
}

export function load(recs: MooncakeRecord[], rateScale = 1): FleetRequest[] {
  const chain = new ChainInterner();
  return arrange(
    recs.map((r, i) => fromMooncake(r, i, chain)),
    rateScale,
  );
}

/** A trace file's lines (JSONL, trailing newline): `requests` arrivals every 400 ms, 20
 *  conversations whose turns each extend the previous one by two blocks over a shared root. */
export function steppedConversationJsonl(requests: number): string {
  const lines: string[] = [];
  for (let i = 0; i < requests; i++) {
    const conv = i % 20;
    const turn = Math.floor(i / 20);
    const ids = [0];
    for (let t = 0; t <= turn; t++) ids.push(1000 * conv + 10 * t + 1, 1000 * conv + 10 * t + 2);
    lines.push(
      JSON.stringify({ timestamp: i * 400, input_length: 512 * ids.length, output_length: 20, hash_ids: ids }),
    );
  }
  return lines.join('\n') + '\n';
}
