// The segment-tokens tests' pieces: a tokenizer handle that notes every long text it BPE-encodes
// (what a framed miss or a second pass over a tool output costs), and the one-tool-call
// conversation a tool output arrives in.
import type { TokenizerHandle } from '../../middleware/tokens/registry.ts';
import type { ChatMessage } from '../../middleware/types.ts';

/** Texts longer than this are noted (a piece's frame alone is shorter). */
const LONG_ENCODE_CHARS = 100;

export interface LongEncodes {
  /** `base` (same name, so the same id cache; its own decode memo) whose encode notes long texts. */
  tok: TokenizerHandle;
  /** The lengths of the long texts encoded while `on`. */
  long: number[];
  on: boolean;
}

export function noteLongEncodes(base: TokenizerHandle, on = true): LongEncodes {
  const rig: LongEncodes = {
    tok: {
      ...base,
      encode: (t: string) => {
        if (t.length > LONG_ENCODE_CHARS && rig.on) rig.long.push(t.length);
        return base.encode(t);
      },
    },
    long: [],
    on,
  };
  return rig;
}

/** The assistant's one tool call: `c1`, `run` with these arguments. */
export function callsRun(args = '{}'): ChatMessage {
  return {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: args } }],
  };
}

/** A user's task, the assistant's one tool call (`c1`, `run {}`), and the tool's `output`. */
export function toolTurn(output: string): ChatMessage[] {
  return [{ role: 'user', content: 'task' }, callsRun(), { role: 'tool', tool_call_id: 'c1', content: output }];
}
