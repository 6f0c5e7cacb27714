// The three context steps of this folder in their fixed order, over the JSON document kept at
// SessionState.ledger: stabilise (defer elisions) → ledger (observations, tombstones) →
// compaction (watermarks, checkpoint). One call per model request. Pure apart from the
// artifact store and optional summariser the options carry.
import type { ChatMessage, Receipt } from '../types.ts';
import { compactMessages, type CompactionOptions, type CompactionState } from '../compaction/compact.ts';
import { forgetBelow, stabilise, type StabiliseOptions, type StabiliseState } from '../stabilise/stabilise.ts';
import { applyLedger, type LedgerOptions } from './ledger.ts';
import type { LedgerState } from './types.ts';

/** The JSON document under SessionState.ledger. */
export interface LedgerBundle {
  stabilise?: StabiliseState;
  observations?: LedgerState;
  compaction?: CompactionState;
}

export interface ChainOptions {
  stabilise?: StabiliseOptions | false;
  ledger?: LedgerOptions | false;
  compaction?: CompactionOptions | false;
}

export interface ChainResult {
  messages: ChatMessage[];
  state: LedgerBundle;
  receipts: Receipt[];
}

export async function runContextChain(
  input: ChatMessage[],
  prev: LedgerBundle | undefined,
  opts: ChainOptions = {},
): Promise<ChainResult> {
  const state: LedgerBundle = { ...(prev ?? {}) };
  const receipts: Receipt[] = [];
  let msgs = input;
  if (opts.stabilise !== false) {
    const r = stabilise(msgs, state.stabilise, {
      ...(opts.stabilise ?? {}),
      frozenBelow: state.compaction?.watermark ?? 0,
    });
    msgs = r.messages;
    state.stabilise = r.state;
    receipts.push(...r.receipts);
  }
  if (opts.ledger !== false) {
    const r = applyLedger(msgs, state.observations, opts.ledger ?? {});
    msgs = r.messages;
    state.observations = r.state;
    receipts.push(...r.receipts);
  }
  if (opts.compaction !== false && opts.compaction) {
    const r = await compactMessages(msgs, state.compaction, {
      ...opts.compaction,
      ledger: state.observations,
      rawInput: input,
    });
    msgs = r.messages;
    state.compaction = r.state;
    receipts.push(...r.receipts);
    if (r.compacted && state.stabilise) state.stabilise = forgetBelow(state.stabilise, r.compacted.watermark);
  }
  return { messages: msgs, state, receipts };
}
