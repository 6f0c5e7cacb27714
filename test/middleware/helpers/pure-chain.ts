// Test harness over the pure cores of stabilise → ledger → compaction (approximate token counts,
// no tokenizer, no session store), for unit tests of those modules' interplay. The product runs
// the one stage list of middleware/chain.ts; test/middleware/one-chain.test.ts checks that.
import {
  compactMessages,
  type CompactionOptions,
  type CompactionState,
} from '../../../middleware/compaction/compact.ts';
import { applyLedger, type LedgerOptions } from '../../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../../middleware/ledger/types.ts';
import {
  forgetBelow,
  stabilise,
  type StabiliseOptions,
  type StabiliseState,
} from '../../../middleware/stabilise/stabilise.ts';
import type { ChatMessage, Receipt } from '../../../middleware/types.ts';

export interface PureChainState {
  stabilise?: StabiliseState;
  observations?: LedgerState;
  compaction?: CompactionState;
}

export interface PureChainOptions {
  stabilise?: StabiliseOptions | false;
  ledger?: LedgerOptions | false;
  compaction?: CompactionOptions | false;
}

export async function runPureChain(
  input: ChatMessage[],
  prev: PureChainState | undefined,
  opts: PureChainOptions = {},
): Promise<{ messages: ChatMessage[]; state: PureChainState; receipts: Receipt[] }> {
  const state: PureChainState = { ...(prev ?? {}) };
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
  if (opts.compaction) {
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
