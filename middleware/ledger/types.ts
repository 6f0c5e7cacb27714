// Shapes of the observation ledger: what a tool call read and wrote, the observations bound to
// those sources, and the tombstones and evictions ctxgate emitted. All JSON-serialisable: the
// state is the `ledger` stage's part of the session state (LEDGER_SLOT).
import { defineSlot } from '../session/stage-state.ts';

/** How a call touched a source. `list` (ls/find) goes stale only on structural writes under the
 * dir (create/delete/move); `search` (grep -r, git status/diff) on any write under it. */
export type Effect = 'read' | 'write' | 'list' | 'search';

export interface SourceEffect {
  uri: string;
  effect: Effect;
  /** Creates, deletes or moves a file (changes directory listings). */
  structural?: boolean;
}

export interface CallEffects {
  effects: SourceEffect[];
  /** Transient state (process lists, HTTP polls): expires by time-to-live. */
  ttl?: { calls?: number; seconds?: number };
  /** The call may have written files we cannot name (python scripts, make, unknown tools). */
  unknownWrite?: boolean;
}

export interface ToolInvocation {
  tool: string;
  /** Parsed JSON arguments (or `{ command }` for text-mode agents). */
  args: Record<string, unknown>;
}

export interface StaleMark {
  reason: 'written' | 'expired' | 'external';
  /** 1-based action number of the writing call. */
  byCall?: number;
  detail?: string;
}

export interface Observation {
  /** Tool call id (or `text-<n>` for text-mode agents). */
  id: string;
  tool: string;
  /** 1-based action number across the conversation. */
  call: number;
  /** Message index of the result (tool or user message). */
  index: number;
  /** Short form of the command or arguments (redacted, bounded). */
  label: string;
  reads: SourceEffect[];
  writes: SourceEffect[];
  unknownWrite?: boolean;
  hash: string;
  tokens: number;
  exit: number | null;
  ttl?: { calls?: number; seconds?: number };
  /** Unix seconds when first observed. */
  at: number;
  stale?: StaleMark;
  /** Set once a tombstone or eviction covers this observation. */
  handled?: 'tombstone' | 'evicted';
}

export interface Tombstone {
  /** Message index after whose content the note is appended. */
  anchor: number;
  obs: string;
  text: string;
}

export interface Eviction {
  index: number;
  /** Hash of the agent's content we replaced; a mismatch drops the eviction. */
  hash: string;
  text: string;
}

export interface ExternalInvalidation {
  uri: string;
  reason: string;
  at: number;
}

/** One call's audit record: [tool call id, action number, exit code, output hash]. */
export type CallRecord = readonly [id: string, call: number, exit: number | null, hash: string];

export interface LedgerState {
  v: 2;
  /** Agent messages processed so far. */
  seen: number;
  /** Hash of message `seen - 1` as processed, to detect a rewound history. */
  tailHash?: string;
  actions: number;
  observations: Observation[];
  /** Per-call records for audits, in the order first seen, in chunks (call-log.ts). */
  calls: CallRecord[][];
  tombstones: Tombstone[];
  evictions: Eviction[];
  pending: ExternalInvalidation[];
  /** Calls awaiting a result: id → invocation (text-mode agents keep one). Made by openCalls():
   * no prototype. */
  open: Record<string, { tool: string; args: Record<string, unknown>; call: number }>;
  /** Open file of SWE-agent's windowed editor (its `edit`/`goto` act on it). */
  openFile?: string;
  /** Script files written by heredoc → files they write when run. */
  scripts?: Record<string, string[]>;
}

export function emptyLedger(): LedgerState {
  return {
    v: 2,
    seen: 0,
    actions: 0,
    observations: [],
    calls: [],
    tombstones: [],
    evictions: [],
    pending: [],
    open: openCalls(),
  };
}

/**
 * A record of open calls, `from`'s entries copied in their order: with no prototype. A tool call
 * id is the agent's text: on a plain object `constructor` or `toString` would be found on
 * Object.prototype (a result with no call then read as one, and threw) and `__proto__` would set
 * the prototype instead of a key. And every call adds and deletes a key never seen before (its
 * call id): a plain object takes a new hidden class for each (~3 µs), an object without a
 * prototype is a dictionary from the start (~1 µs). Same keys, order and JSON.
 */
export function openCalls(from?: Readonly<LedgerState['open']>): LedgerState['open'] {
  const out: LedgerState['open'] = Object.create(null);
  if (from !== undefined) for (const k of Object.keys(from)) out[k] = from[k];
  return out;
}

/** The first stored shape: the same but `calls`, a record id → [call, exit, output hash]. */
export interface LedgerStateV1 extends Omit<LedgerState, 'v' | 'calls'> {
  v: 1;
  calls: Record<string, [number, number | null, string]>;
}

/** The ledger's part of the session state (stage `ledger`; also written by the invalidate route).
 * Read it with readLedger (ledger/slot.ts), which also reads a part stored as v1. */
export const LEDGER_SLOT = defineSlot<LedgerState>('ledger', 2);
export const LEDGER_SLOT_V1 = defineSlot<LedgerStateV1>('ledger', 1);
