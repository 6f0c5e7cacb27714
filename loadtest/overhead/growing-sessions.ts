// Growing agent sessions for `bench overhead`: each call of a session resends the whole history
// plus one new tool output (~550 tokens, a numbered file read), from ~1k tokens on call 1 to ~17k
// on call 30, after which the slot starts a new session (a new first user message, so a new
// derived session id). Bodies are built once (JSON strings, split at the session marker) so the
// load generator only concatenates; the sender picks slots round-robin, so consecutive calls of one
// session are `slots` requests apart and never overlap while slots > connections.
// Memory: slots × calls bodies, ~35 KB each on average (~1 MB per slot at the defaults).
import { makeFile } from '../synth/content.ts';
import { mulberry32 } from '../profiles/rng.ts';

export const DEFAULT_CALLS_PER_SESSION = 30;
/** ~550 tokens of numbered Python source (qwen3, measured: ~3.2 characters per token). */
const TOOL_OUTPUT_CHARS = 1700;
const MARKER = '\u0000RUN\u0000';

const SYSTEM = [
  'You are a coding agent working in a Python repository. You read files, run tests and edit code with the tools',
  'provided. Before changing a file, read it. After every edit, run the tests that cover it. Keep changes minimal,',
  'keep the existing style, and never touch files outside the task. Explain what you found before you change it.',
].join(' ');

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the repository with line numbers.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run',
      description: 'Run a shell command in the repository root and return its output.',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'edit_file',
      description: 'Replace one exact span of a file with new text.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } },
        required: ['path', 'old', 'new'],
      },
    },
  },
];

export interface GrowingOptions {
  slots: number;
  calls?: number;
  seed?: number;
  model: string;
  stream?: boolean;
  /** Rewrites each chat body into another ingress API's body (done once, up front). */
  convert?: (chatJson: string) => string;
}

/** Numbered lines of a synthetic source file, cut at about `chars` characters. */
function toolOutput(path: string, rng: () => number): string {
  const f = makeFile(path, rng, 12);
  let s = '';
  for (let i = 0; i < f.lines.length && s.length < TOOL_OUTPUT_CHARS; i++)
    s += `${String(i + 1).padStart(4)}\t${f.lines[i]}\n`;
  return s;
}

/** The session's bodies, call by call, each split at the marker: [head, tail]. */
export function sessionBodies(slot: number, o: GrowingOptions): [string, string][] {
  const calls = o.calls ?? DEFAULT_CALLS_PER_SESSION;
  const rng = mulberry32((o.seed ?? 7) * 1000 + slot);
  const task =
    `Task ${MARKER}: the claim validator in src/auth rejects tokens whose audience list contains the service name in upper case. ` +
    'Find where the audience is compared, make the comparison case-insensitive, and add a regression test. Do not change the public API. '.repeat(
      3,
    );
  const messages: unknown[] = [
    { role: 'system', content: SYSTEM.repeat(8) },
    { role: 'user', content: task },
  ];
  const out: [string, string][] = [];
  for (let k = 0; k < calls; k++) {
    if (k > 0) {
      const path = `src/mod${slot % 7}/file_${k}.py`;
      const id = `call_${k}`;
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }],
      });
      messages.push({ role: 'tool', tool_call_id: id, content: toolOutput(path, rng) });
    }
    const chat = JSON.stringify({
      model: o.model,
      messages,
      tools: TOOLS,
      max_tokens: 16,
      temperature: 0,
      ...(o.stream ? { stream: true } : {}),
    });
    const json = o.convert ? o.convert(chat) : chat;
    const at = json.indexOf(JSON.stringify(MARKER).slice(1, -1));
    const esc = JSON.stringify(MARKER).length - 2;
    out.push([json.slice(0, at), json.slice(at + esc)]);
  }
  return out;
}

/**
 * Round-robin sender state over `slots` sessions. After renew(), every slot starts a new session;
 * prime() gives the calls that bring slot s to call (s × calls / slots), so the measured traffic
 * has an even mix of prompt sizes and every session's earlier calls were seen by the target,
 * as in steady state. A slot that passes its last call starts a new session (generation + 1).
 */
export class GrowingTraffic {
  private readonly bodies: [string, string][][];
  private readonly callAt: number[];
  private readonly gen: number[];
  private cursor = 0;
  readonly calls: number;

  constructor(readonly o: GrowingOptions) {
    this.calls = o.calls ?? DEFAULT_CALLS_PER_SESSION;
    this.bodies = Array.from({ length: o.slots }, (_, s) => sessionBodies(s, o));
    this.callAt = new Array<number>(o.slots).fill(0);
    this.gen = new Array<number>(o.slots).fill(0);
  }

  private body(s: number, k: number): string {
    const [head, tail] = this.bodies[s][k];
    return `${head}${s}-${this.gen[s]}${tail}`;
  }

  /** The next request body. */
  next(): string {
    const s = this.cursor++ % this.o.slots;
    let k = this.callAt[s]++;
    if (k >= this.calls) {
      this.gen[s]++;
      k = 0;
      this.callAt[s] = 1;
    }
    return this.body(s, k);
  }

  /** Every slot on a new session at call 1 (the next target sees no state of the last one). */
  renew(): void {
    for (let s = 0; s < this.o.slots; s++) {
      this.gen[s] += 1;
      this.callAt[s] = 0;
    }
  }

  /** Bodies, slot-interleaved, that advance slot s from its call to call (s × calls / slots). */
  prime(): string[] {
    const out: string[] = [];
    const to = (s: number): number => Math.floor((s * this.calls) / this.o.slots);
    for (let j = 0; j < this.calls; j++) {
      for (let s = 0; s < this.o.slots; s++) {
        if (this.callAt[s] === j && j < to(s)) {
          out.push(this.body(s, j));
          this.callAt[s]++;
        }
      }
    }
    return out;
  }
}
