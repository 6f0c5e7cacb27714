// Observation ledger core: turns new tool results into observations bound to their sources,
// marks earlier reads stale on write-after-read / TTL / external invalidation, and emits ONE
// tombstone per stale observation, appended at the leaf (a hard eviction only when the caller
// passes a cost model: the pipeline never does). Tombstones live in state keyed by anchor index and are re-appended
// identically on every later call, so the prefix never changes. Pure: (messages, state, opts)
// → { messages, state, receipts }; the previous state is never changed (a shallow copy: its
// observations are shared, and one marked stale is replaced by a marked copy), so a stored state's
// parts can stay shared and frozen. O(new messages × live observations) per call, plus pointer
// copies of the state's lists (observations ≤ maxObservations) and of the call records' chunk list
// and last chunk (call-log.ts: O(√ records) at the bound, not O(records)); the lists are returned
// frozen and sized from the previous state's sizes, so the store's put costs what changed.
// Two steps (beginLedger, then its finish): what the messages and receipts need, then the new
// observations' token counts and the lists' freeze, which a stage may run after the upstream send.
import type { ChatMessage, Receipt } from '../types.ts';
import { sha256Hex } from '../canonical-json.ts';
import { freezeDeep, freezeEdited, indicesFrom } from '../deep-freeze.ts';
import { copyArray } from '../frozen-copy.ts';
import { withCalls, type CallsResult } from './call-log.ts';
import { frameNote } from '../redaction/framing.ts';
import { looksSecret, redact } from '../redaction/redact.ts';
import { decideEviction, DEFAULT_EVICTION_COST_MODEL, type EvictionCostModel } from './cost-model.ts';
import { appendNote, approxTokens, messageText, messageTokens, withText, type CountTokens } from './message-text.ts';
import { callEffects, parseExitCode, textModeCommand, type SemanticsRule } from './semantics.ts';
import {
  emptyLedger,
  openCalls,
  type CallRecord,
  type LedgerState,
  type Observation,
  type SourceEffect,
  type StaleMark,
} from './types.ts';
import { uriPath, writeInvalidates } from './uri.ts';

export const DEFAULT_MAX_OBSERVATIONS = 1024;
export const DEFAULT_MAX_CALL_RECORDS = 4096;
const LABEL_MAX = 160;

export interface LedgerOptions {
  countTokens?: CountTokens;
  cwd?: string;
  rules?: SemanticsRule[];
  /** Unix seconds (injected for purity and tests). */
  now?: number;
  /** A cost model enables hard eviction where it says re-prefilling is cheaper; absent or `false`
   * (the default, and what the pipeline uses): tombstones only, nothing the agent sent is removed. */
  eviction?: EvictionCostModel | false;
  maxObservations?: number;
}

export interface LedgerResult {
  messages: ChatMessage[];
  state: LedgerState;
  receipts: Receipt[];
}

/** beginLedger's result: `state` is complete once `finish` has run. */
export interface LedgerBegun extends LedgerResult {
  /**
   * Counts the new observations' tokens and freezes and sizes the state's growing lists, in place
   * (the same objects `state` holds, so a part already written into the session is complete after
   * it). The messages and receipts do not depend on it: it may run after the upstream send, but
   * must run, once, before the state is read by a later call or stored.
   */
  finish: () => void;
}

const STAGE = 'ledger';

/** The ledger in one step: beginLedger, then its finish. */
export function applyLedger(
  input: ChatMessage[],
  prev: LedgerState | undefined,
  opts: LedgerOptions = {},
): LedgerResult {
  const r = beginLedger(input, prev, opts);
  r.finish();
  return { messages: r.messages, state: r.state, receipts: r.receipts };
}

/**
 * The ledger's work that the messages and receipts need (observations, staleness, tombstones,
 * render), with the rest left to `finish`: the new observations' token counts (a BPE pass over
 * each new tool output: most of this stage's time on growing sessions) and the freeze and sizing
 * of the state's lists. A count a tombstone's receipt reads on this call is taken at once.
 */
export function beginLedger(
  input: ChatMessage[],
  prev: LedgerState | undefined,
  opts: LedgerOptions = {},
): LedgerBegun {
  const count = opts.countTokens ?? approxTokens;
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const receipts: Receipt[] = [];
  // New observations whose `tokens` is still to count, with their text (a marked copy of one is
  // added too: markStale). Filled by tokensOf (a receipt needs it now) or finish.
  const uncounted = new Map<Observation, string>();
  let st: LedgerState = prev ? copyOf(prev) : emptyLedger();
  // What this call changes in the previous state's growing parts (see sizeEdits).
  let edits: Edits | undefined = prev ? { observations: new Set() } : undefined;
  // Call records this call adds, put into the chunks at the end (call-log.ts withCalls).
  const added: CallRecord[] = [];
  if (st.seen > input.length || (st.seen > 0 && st.tailHash !== tailKey(input[st.seen - 1]))) {
    receipts.push({
      stage: STAGE,
      action: 'reset',
      reason: `history rewound below message ${st.seen}; ledger restarted`,
    });
    st = { ...emptyLedger(), pending: st.pending };
    edits = undefined;
    added.length = 0;
  }
  const newlyStale: Observation[] = [];
  const firstUser = input.findIndex((m) => m.role === 'user');
  for (let i = st.seen; i < input.length; i++) {
    const m = input[i];
    if (m.role === 'assistant') {
      for (const tc of m.tool_calls ?? [])
        st.open[tc.id] = { tool: tc.function?.name ?? '', args: parseArgs(tc.function?.arguments), call: ++st.actions };
      if (!m.tool_calls?.length) {
        const cmd = textModeCommand(messageText(m));
        if (cmd) st.open[`text-${st.actions + 1}`] = { tool: 'swe-agent', args: { command: cmd }, call: ++st.actions };
      }
      continue;
    }
    let id: string | undefined;
    if (m.role === 'tool') {
      const ids = (m as { tool_call_ids?: unknown }).tool_call_ids;
      id = m.tool_call_id ?? (Array.isArray(ids) ? String(ids[0]) : undefined);
    } else if (m.role === 'user' && i > firstUser) {
      id = Object.keys(st.open).find((k) => k.startsWith('text-'));
    }
    if (!id || !st.open[id]) continue;
    const inv = st.open[id];
    delete st.open[id];
    const text = messageText(m);
    const obs = observe(id, inv, i, text, st, opts, now);
    uncounted.set(obs, text);
    if (obs.unknownWrite)
      receipts.push({
        stage: STAGE,
        action: 'unknown_write',
        target: obs.label,
        reason: `call ${obs.call} may write files it does not name; nothing invalidated`,
      });
    for (const w of obs.writes) {
      for (let k = 0; k < st.observations.length; k++) {
        const o = st.observations[k];
        if (o.stale || o.call >= obs.call) continue;
        const hit = o.reads.find((r) => writeInvalidates(w, r));
        if (hit)
          newlyStale.push(markStale(st, k, { reason: 'written', byCall: obs.call, detail: hit.uri }, edits, uncounted));
      }
    }
    edits?.observations?.add(st.observations.length);
    st.observations.push(obs);
    added.push([id, obs.call, obs.exit, obs.hash]);
  }
  st.seen = input.length;
  st.tailHash = input.length ? tailKey(input[input.length - 1]) : undefined;

  for (const ext of st.pending) {
    for (let k = 0; k < st.observations.length; k++) {
      const o = st.observations[k];
      if (o.stale) continue;
      const hit = o.reads.find((r) => writeInvalidates({ uri: ext.uri, structural: true }, r) || r.uri === ext.uri);
      if (hit)
        newlyStale.push(
          markStale(st, k, { reason: 'external', detail: `${hit.uri}: ${ext.reason}` }, edits, uncounted),
        );
    }
  }
  // Emptied: the previous state's own list when it already was (nothing new for the put to freeze).
  if (st.pending.length > 0) st.pending = [];
  for (let k = 0; k < st.observations.length; k++) {
    const o = st.observations[k];
    if (o.stale || !o.ttl) continue;
    const byCalls = o.ttl.calls !== undefined && st.actions - o.call >= o.ttl.calls;
    const bySecs = o.ttl.seconds !== undefined && now - o.at >= o.ttl.seconds;
    if (byCalls || bySecs)
      newlyStale.push(
        markStale(
          st,
          k,
          { reason: 'expired', detail: byCalls ? `${o.ttl.calls} calls` : `${o.ttl.seconds} s` },
          edits,
          uncounted,
        ),
      );
  }

  // Decide the remedy for each newly stale observation; the anchor is the current leaf.
  const anchor = input.length - 1;
  if (anchor >= 0 && newlyStale.length > 0) {
    const tokensFrom = suffixTokens(input, count);
    for (const o of newlyStale) {
      if (o.handled || o.index > anchor) continue;
      const text = tombstoneText(o, opts.cwd);
      const evictable = !!opts.eviction && !st.evictions.some((e) => e.index === o.index);
      const d = decideEviction(
        {
          tokensAfter: tokensFrom[o.index + 1] ?? 0,
          staleTokens: tokensOf(o, uncounted, count),
          tombstoneTokens: count(text),
          callsSoFar: st.actions,
        },
        opts.eviction || DEFAULT_EVICTION_COST_MODEL,
      );
      const costs = `evict ${d.evictCost.toFixed(0)} vs carry ${d.carryCost.toFixed(0)} over ~${d.remainingCalls} calls`;
      if (evictable && d.evict) {
        o.handled = 'evicted';
        // Shared with the previous state until written (copyOf).
        if (prev !== undefined && st.evictions === prev.evictions) st.evictions = copyArray(st.evictions);
        st.evictions.push({
          index: o.index,
          hash: sha256Hex(messageText(input[o.index])),
          text: evictionText(o, opts.cwd),
        });
        receipts.push({
          stage: STAGE,
          action: 'evict',
          target: o.reads[0]?.uri,
          tokens_before: tokensOf(o, uncounted, count),
          tokens_after: count(evictionText(o, opts.cwd)),
          reason: `${o.stale!.reason} at call ${o.call}; ${costs}`,
        });
      } else {
        o.handled = 'tombstone';
        st.tombstones.push({ anchor, obs: o.id, text });
        receipts.push({
          stage: STAGE,
          action: 'tombstone',
          target: o.reads[0]?.uri,
          tokens_after: count(text),
          reason: `${o.stale!.reason} at call ${o.call}; ${costs}`,
        });
      }
    }
  }
  const calls = withCalls(st.calls, added, DEFAULT_MAX_CALL_RECORDS);
  st.calls = calls.calls;
  // No call left open, as before this call (the usual end of a call: every result came back):
  // the previous state's record, frozen and sized, instead of the emptied copy.
  if (prev !== undefined && isEmpty(st.open) && isEmpty(prev.open)) st.open = prev.open;
  trim(st, opts.maxObservations ?? DEFAULT_MAX_OBSERVATIONS, edits);
  return {
    messages: render(input, st),
    state: st,
    receipts,
    finish: finisher(uncounted, count, prev, st, edits, calls),
  };
}

// Per-call closures come from module functions as anonymous arrows: tsx (esbuild keepNames) names
// every closure written as `const f = () =>`, a defineProperty of ~1 µs per call each.

/** The tokens of `o`, counted now when still to count (a receipt reads them on this call). */
function tokensOf(o: Observation, uncounted: Map<Observation, string>, count: CountTokens): number {
  const text = uncounted.get(o);
  if (text !== undefined) {
    o.tokens = count(text);
    uncounted.delete(o);
  }
  return o.tokens;
}

/** beginLedger's `finish` (see LedgerBegun): runs once, whoever calls it how often. */
function finisher(
  uncounted: Map<Observation, string>,
  count: CountTokens,
  prev: LedgerState | undefined,
  state: LedgerState,
  edits: Edits | undefined,
  calls: CallsResult,
): () => void {
  let finished = false;
  return () => {
    if (finished) return;
    finished = true;
    for (const [o, text] of uncounted) o.tokens = count(text);
    uncounted.clear();
    if (prev && edits) sizeEdits(prev, state, edits, calls);
  };
}

/** Re-applies evictions and tombstones from state: deterministic, so byte-stable. (Frame escaping
 *  of untrusted text happens once for the whole request, before any stage: pipeline.ts.) An
 *  anchored message resent as the same object with the same notes gets the same noted object as
 *  last call (one WeakMap look-up), so the stages after this one find it in their per-object
 *  memos (hashes, escaping, render) instead of meeting a new copy of it every call. The notes are
 *  told equal to last call's by their texts (the state's own strings, shared call to call: a
 *  pointer compare each) before any join: an anchor's note is joined only when its texts changed,
 *  so a call costs O(messages + tombstones) pointer work, not a join and a compare of every
 *  tombstone's text (O(history) characters) at every anchor. */
export function render(input: ChatMessage[], st: LedgerState): ChatMessage[] {
  // Nothing to place: the caller's own array (the stage then sees nothing changed, in O(1)).
  if (st.evictions.length === 0 && st.tombstones.length === 0) return input;
  const out = input.slice();
  for (const e of st.evictions) {
    if (e.index < out.length && sha256Hex(messageText(input[e.index])) === e.hash)
      out[e.index] = withText(out[e.index], e.text);
  }
  // Each anchor's texts in the tombstones' order, anchors in order of first appearance.
  const byAnchor = new Map<number, string[]>();
  for (const t of st.tombstones) {
    const texts = byAnchor.get(t.anchor);
    if (texts === undefined) byAnchor.set(t.anchor, [t.text]);
    else texts.push(t.text);
  }
  for (const [a, texts] of byAnchor) {
    if (a >= out.length) continue;
    const m = out[a];
    const hit = noted.get(m);
    if (hit !== undefined && sameTexts(hit.texts, texts)) {
      out[a] = hit.out;
      continue;
    }
    const note = texts.join('\n');
    if (hit !== undefined && hit.note === note) {
      hit.texts = texts;
      out[a] = hit.out;
    } else {
      const o = appendNote(m, note);
      noted.set(m, { note, texts, out: o });
      out[a] = o;
    }
  }
  return out;
}

/** The noted copy of an anchored message made last time, per message object (messages are never
 * changed in place), so a message resent as the same object gets the same noted object; with the
 * texts its note was joined from (equal texts join to the same note). */
const noted = new WeakMap<ChatMessage, { note: string; texts: readonly string[]; out: ChatMessage }>();

/** Equal lists of strings (the same strings are usually the same objects: a pointer compare). */
function sameTexts(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A URI parsed out of a command that carries a secret (`cat x # API_KEY=…`) is kept only as a
 *  hash: the same text always maps to the same stand-in, so reads and writes still match. */
function safeUri<T extends { uri: string }>(e: T): T {
  return looksSecret(e.uri) ? { ...e, uri: `redacted://${sha256Hex(e.uri).slice(0, 16)}` } : e;
}

function observe(
  id: string,
  inv: LedgerState['open'][string],
  index: number,
  text: string,
  st: LedgerState,
  opts: LedgerOptions,
  now: number,
): Observation {
  const eff = callEffects(
    { tool: inv.tool, args: inv.args },
    { cwd: opts.cwd, rules: opts.rules, scripts: st.scripts, openFile: st.openFile },
  );
  if (eff.scripts) st.scripts = { ...(st.scripts ?? {}), ...eff.scripts };
  if (eff.openFile) st.openFile = eff.openFile;
  // SWE-agent prints the open file after each command; it is the truth for `edit`/`goto`.
  const shown = text.includes('(Open file: ') ? /\(Open file: ([^)\n]+)\)/.exec(text) : null;
  if (shown && shown[1] !== 'n/a') st.openFile = `file://${shown[1].trim()}`;
  const nl = eff.label.indexOf('\n');
  const first = nl < 0 ? eff.label : eff.label.slice(0, nl);
  // redact() changes nothing where looksSecret() finds nothing (no rule keeps a match), and the
  // check costs a fraction of a redaction: most labels carry no secret.
  const label = (looksSecret(first) ? redact(first).text : first).slice(0, LABEL_MAX);
  return {
    id,
    tool: inv.tool,
    call: inv.call,
    index,
    label,
    reads: orNone(eff.effects.filter((e) => e.effect !== 'write').map(safeUri)),
    writes: orNone(eff.effects.filter((e) => e.effect === 'write').map(safeUri)),
    ...(eff.unknownWrite ? { unknownWrite: true } : {}),
    hash: sha256Hex(text),
    // Counted later (beginLedger's tokensOf or finish); the key keeps its place in the JSON.
    tokens: 0,
    exit: parseExitCode(text),
    ...(eff.ttl ? { ttl: eff.ttl } : {}),
    at: now,
  };
}

/** One frozen, sized empty list shared by every observation with no reads or no writes (most
 * have no writes): a new empty array each is one more object for the store's put to freeze. */
const NONE: SourceEffect[] = freezeDeep([]);

function orNone(list: SourceEffect[]): SourceEffect[] {
  return list.length === 0 ? NONE : list;
}

/** Observation k marked stale: a marked copy replaces it (the state's own, so `handled` can be set
 * on it); the copy of one still to count is to count too. */
function markStale(
  st: LedgerState,
  k: number,
  s: StaleMark,
  edits: Edits | undefined,
  uncounted: Map<Observation, string>,
): Observation {
  const was = st.observations[k];
  const o = { ...was, stale: s };
  st.observations[k] = o;
  edits?.observations?.add(k);
  const text = uncounted.get(was);
  if (text !== undefined) uncounted.set(o, text);
  return o;
}

/** Indices of `observations` that a call added, replaced or removed in the previous state's
 * copy; undefined once the list was rebuilt (trim). */
interface Edits {
  observations?: Set<number>;
}

/**
 * The growing lists, frozen and sized from the previous state's sizes (deep-freeze.ts
 * freezeEdited): the store's put then visits what this call changed, not every observation and
 * call record again. An observation marked stale is replaced by its marked copy after the
 * `handled` remedy is set on it, so its size is taken here, after that. The call records' chunks
 * that withCalls copied are sized from the chunks they replace, then the list of chunks.
 */
function sizeEdits(prev: LedgerState, st: LedgerState, edits: Edits, calls: CallsResult): void {
  if (edits.observations) st.observations = freezeEdited(prev.observations, st.observations, edits.observations);
  if (st.calls !== prev.calls) {
    for (const [i, e] of calls.edits) {
      const c = st.calls[i];
      st.calls[i] = e.prev ? freezeEdited(e.prev, c, e.keys ?? indicesFrom(e.prev, c, 0)) : freezeDeep(c);
    }
    st.calls = freezeEdited(prev.calls, st.calls, indicesFrom(prev.calls, st.calls, calls.from));
  }
  st.tombstones = freezeEdited(
    prev.tombstones,
    st.tombstones,
    indicesFrom(prev.tombstones, st.tombstones, prev.tombstones.length),
  );
}

/** A copy the caller may change: the lists and the open calls copied, the observations shared;
 * the call records' chunks are never changed in place (withCalls copies what it changes), the
 * evictions are copied where one is added (rare: only with a cost model) and the pending
 * invalidations are only read, then replaced: both stay the previous state's (frozen and sized
 * when it was stored) unless changed, so the put has no new copy of them to walk and freeze. */
function copyOf(p: LedgerState): LedgerState {
  return {
    ...p,
    observations: copyArray(p.observations),
    tombstones: copyArray(p.tombstones),
    evictions: p.evictions,
    pending: p.pending,
    open: openCalls(p.open),
  };
}

/** No own enumerable key (a record of open calls: ids only). */
function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

function tailKey(m: ChatMessage): string {
  return `${m.role}:${m.tool_call_id ?? ''}`;
}

function parseArgs(s: string | undefined): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(s ?? '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { command: s ?? '' };
  }
}

/** tokensFrom[i] = tokens of messages i..end. */
function suffixTokens(msgs: ChatMessage[], count: CountTokens): number[] {
  const out = new Array<number>(msgs.length + 1).fill(0);
  for (let i = msgs.length - 1; i >= 0; i--) out[i] = out[i + 1] + messageTokens(msgs[i], count);
  return out;
}

export function displayPath(uri: string, cwd?: string): string {
  const p = uriPath(uri);
  return cwd && p.startsWith(cwd + '/') ? p.slice(cwd.length + 1) : p;
}

function subject(o: Observation, cwd?: string): string {
  const src = o.stale?.detail && o.stale.reason !== 'expired' ? o.stale.detail.split(': ')[0] : o.reads[0]?.uri;
  if (o.ttl || !src) return `the output of \`${o.label.slice(0, 60)}\``;
  const kind = src.startsWith('dir://')
    ? o.reads.find((r) => r.uri === src)?.effect === 'list'
      ? 'listing'
      : 'search'
    : 'read';
  return `the ${kind} of ${displayPath(src, cwd)}`;
}

export function tombstoneText(o: Observation, cwd?: string): string {
  const s = o.stale!;
  const why =
    s.reason === 'written'
      ? `is stale: written by call ${s.byCall} — re-read before relying on it`
      : s.reason === 'expired'
        ? `has expired (TTL ${s.detail}) — re-run before relying on it`
        : `is stale: changed outside the session (${s.detail?.split(': ').slice(1).join(': ') || 'external'}) — re-read before relying on it`;
  return frameNote(`${subject(o, cwd)} at call ${o.call} ${why}`);
}

function evictionText(o: Observation, cwd?: string): string {
  return frameNote(
    `output removed: ${subject(o, cwd)} at call ${o.call} was stale (${o.stale!.reason}${o.stale!.byCall ? ` by call ${o.stale!.byCall}` : ''}) — re-read it if needed`,
  );
}

/** External invalidation (the gateway's POST …/invalidate): applied on the next call. */
export function invalidate(
  prev: LedgerState | undefined,
  uri: string,
  reason: string,
  now = Math.floor(Date.now() / 1000),
): LedgerState {
  const st = prev ? structuredClone(prev) : emptyLedger();
  st.pending.push({ uri, reason: redact(reason).text.slice(0, 200), at: now });
  return st;
}

/** Stale observations still shown verbatim in `out` with no tombstone for them there.
 * Observations below `compactedBelow` (the compaction watermark) were replaced by the digest,
 * which marks stale entries itself, and evicted ones are gone: neither is exposed. */
export function staleExposure(st: LedgerState, out: ChatMessage[], compactedBelow = 0): number {
  const all = out.map(messageText).join('\n');
  let n = 0;
  for (const o of st.observations) {
    if (!o.stale || o.handled === 'evicted' || o.index < compactedBelow) continue;
    const t = st.tombstones.find((x) => x.obs === o.id);
    if (!t || !all.includes(t.text)) n++;
  }
  return n;
}

/** Bounds the observations (the call records are bounded by withCalls). O(1) unless over. */
function trim(st: LedgerState, max: number, edits?: Edits): void {
  if (st.observations.length > max) {
    // Drop handled stale observations first, then the oldest.
    const keep = st.observations.filter((o) => !(o.stale && o.handled));
    st.observations = keep.length > max ? keep.slice(keep.length - max) : keep;
    if (edits) edits.observations = undefined;
  }
}
