// A context strategy decides, per call, what of the raw (append-only) history is sent. Each run
// is stateful over the calls of one session; `origin` maps staged messages back to raw indexes
// so exposure metrics can tell which raw observations are still in context.
import type { ChatMessage, ToolDef } from '../../middleware/types.ts';

export interface StagedView {
  messages: ChatMessage[];
  /** Raw message index each staged message came from; -1 for messages the strategy wrote. */
  origin: number[];
  /** Raw indexes whose content was replaced by a placeholder or pointer (not in context). */
  hidden: Set<number>;
  /** The tools sent, when the strategy rewrote them (default: the call's own). */
  tools?: ToolDef[];
}

export interface StrategyContext {
  budget: number;
  count(text: string): number;
}

export interface StrategyRun {
  /** `reserved`: tokens of the request outside the messages (tool schemas); `tools`: the call's tools. */
  stage(raw: ChatMessage[], reserved: number, tools?: ToolDef[]): StagedView | Promise<StagedView>;
}

export interface Strategy {
  name: string;
  describe: string;
  start(ctx: StrategyContext): StrategyRun;
}

export function identity(raw: ChatMessage[]): StagedView {
  return { messages: raw, origin: raw.map((_, i) => i), hidden: new Set() };
}

// One definition of message text and of what counts as an observation, shared with the profiles.
export { messageTextOf as textOf, observationIndexes } from '../profiles/last-n-elision.ts';
