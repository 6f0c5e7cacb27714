// Growing agent sessions for `bench overhead`: each call of a session resends the whole history
// plus one new tool output (~550 tokens, a numbered file read), from ~1k tokens on call 1 to ~17k
// on call 30, after which the slot starts a new session (a new first user message, so a new
// derived session id). Every session (a slot's round) reads files of its own content (the tool
// outputs come from a seed per slot and round), as live traffic does: a gateway's token-id and
// piece caches see new text in each new session, not round 1's outputs again. The sender picks
// slots round-robin, so consecutive calls of one session are `slots` requests apart and never
// overlap while slots > connections. A slot's bodies are built call by call as its session grows
// (the new messages' JSON appended to the previous call's: O(new messages) per call, no stall of
// the load generator at a session's start); with `convert` (another ingress API) a session's
// bodies are built whole when it starts (~2 ms per session of 30 calls).
// Memory: per slot, the current session's message JSON (~65 KB at call 30).
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

/** Rounds apart in the seed space: (seed, slot, round) seeds never meet while slot < this. */
const ROUND_SEED_STRIDE = 1_000_003;

/** The tool outputs' random source of a slot's round (round 0: the seed the bench always used). */
function roundRng(slot: number, round: number, seed = 7): () => number {
  return mulberry32(((seed * 1000 + slot + round * ROUND_SEED_STRIDE) >>> 0) | 0);
}

const TASK =
  `Task ${MARKER}: the claim validator in src/auth rejects tokens whose audience list contains the service name in upper case. ` +
  'Find where the audience is compared, make the comparison case-insensitive, and add a regression test. Do not change the public API. '.repeat(
    3,
  );

/** Call k's new messages (k ≥ 1): the read_file call and its output. */
function callMessages(slot: number, k: number, rng: () => number): [unknown, unknown] {
  const path = `src/mod${slot % 7}/file_${k}.py`;
  const id = `call_${k}`;
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } }],
    },
    { role: 'tool', tool_call_id: id, content: toolOutput(path, rng) },
  ];
}

function firstMessages(): unknown[] {
  return [
    { role: 'system', content: SYSTEM.repeat(8) },
    { role: 'user', content: TASK },
  ];
}

function chatBody(o: GrowingOptions, messages: unknown[]): string {
  return JSON.stringify({
    model: o.model,
    messages,
    tools: TOOLS,
    max_tokens: 16,
    temperature: 0,
    ...(o.stream ? { stream: true } : {}),
  });
}

/** A body split at the session marker: [head, tail]. */
function splitAtMarker(json: string): [string, string] {
  const at = json.indexOf(JSON.stringify(MARKER).slice(1, -1));
  const esc = JSON.stringify(MARKER).length - 2;
  return [json.slice(0, at), json.slice(at + esc)];
}

/** The session's bodies (slot `slot`, round `round`), call by call, each split at the marker. */
export function sessionBodies(slot: number, o: GrowingOptions, round = 0): [string, string][] {
  const calls = o.calls ?? DEFAULT_CALLS_PER_SESSION;
  const rng = roundRng(slot, round, o.seed);
  const messages = firstMessages();
  const out: [string, string][] = [];
  for (let k = 0; k < calls; k++) {
    if (k > 0) messages.push(...callMessages(slot, k, rng));
    const chat = chatBody(o, messages);
    out.push(splitAtMarker(o.convert ? o.convert(chat) : chat));
  }
  return out;
}

/**
 * One slot's session built as it grows: call k's body is call k-1's messages JSON plus the two new
 * messages' JSON, byte for byte what sessionBodies gives (JSON.stringify writes an array's items
 * with ',' between them and nothing else).
 */
class GrowingSession {
  private rng: () => number = () => 0;
  private messages = '';
  private built = 0;
  private head = '';
  private tail = '';
  private whole: [string, string][] | undefined;

  constructor(
    private readonly slot: number,
    private readonly o: GrowingOptions,
  ) {
    // the body around the messages: {"model":…,"messages":[ … ],"tools":…}
    const [before, after] = chatBody(o, ['\u0000']).split('"\\u0000"');
    this.head = before;
    this.tail = after;
  }

  /** Starts the slot's round `round` (its call 0). */
  start(round: number): void {
    if (this.o.convert) {
      this.whole = sessionBodies(this.slot, this.o, round);
      return;
    }
    this.rng = roundRng(this.slot, round, this.o.seed);
    this.messages = firstMessages()
      .map((m) => JSON.stringify(m))
      .join(',');
    this.built = 0;
  }

  /** Call k's body split at the marker; calls come in order (k = the last call or the next). */
  body(k: number): [string, string] {
    if (this.whole) return this.whole[k];
    for (; this.built < k; this.built++) {
      const [a, t] = callMessages(this.slot, this.built + 1, this.rng);
      this.messages += `,${JSON.stringify(a)},${JSON.stringify(t)}`;
    }
    return splitAtMarker(`${this.head}${this.messages}${this.tail}`);
  }
}

/**
 * Round-robin sender state over `slots` sessions. After renew(), every slot starts a new session;
 * prime() gives the calls that bring slot s to call (s × calls / slots), so the measured traffic
 * has an even mix of prompt sizes and every session's earlier calls were seen by the target,
 * as in steady state. A slot that passes its last call starts a new session (generation + 1).
 */
export class GrowingTraffic {
  private readonly sessions: GrowingSession[];
  private readonly callAt: number[];
  private readonly gen: number[];
  /** the round each slot's GrowingSession was last started at */
  private readonly startedGen: number[];
  private cursor = 0;
  readonly calls: number;
  /** The call (0 = a session's first) that the last next() sent. */
  lastCall = -1;

  constructor(readonly o: GrowingOptions) {
    this.calls = o.calls ?? DEFAULT_CALLS_PER_SESSION;
    this.sessions = Array.from({ length: o.slots }, (_, s) => new GrowingSession(s, o));
    this.callAt = new Array<number>(o.slots).fill(0);
    this.gen = new Array<number>(o.slots).fill(0);
    this.startedGen = new Array<number>(o.slots).fill(-1);
  }

  private body(s: number, k: number): string {
    if (this.startedGen[s] !== this.gen[s]) {
      this.startedGen[s] = this.gen[s];
      this.sessions[s].start(this.gen[s]);
    }
    const [head, tail] = this.sessions[s].body(k);
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
    this.lastCall = k;
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
