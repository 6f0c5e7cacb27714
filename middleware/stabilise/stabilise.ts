// History stabilisation: when the agent rewrites earlier messages, compare against what ctxgate
// sent before (per-index hashes) and, for elisions/truncations of already-sent outputs, keep
// sending the earlier content until the next compaction point, so the cached prefix survives.
// Elision is recognised by what changed in place (elision.ts: a reduction of the old text plus at
// most a short marker, any wording), at the same position: same role and tool_call_id, and for a
// `user` observation an unchanged message before it; never the last message (an edited leaf is
// the agent's new word). Other edits pass through with a receipt. Originals that look secret are never stored or
// resurrected. Stored originals are bounded (DEFAULT_MAX_ORIGINAL_BYTES per session).
// Pure: (messages, state, opts) → { messages, state, receipts }; the previous state is never
// mutated (a shallow copy, its stored originals shared). O(messages) plus the bytes of messages
// not hashed before: message hashes and identities are memoised per message object, so history
// resent as the same objects (layout/resent.ts) costs a lookup per message. The lists and the
// originals' index are returned frozen and sized from the previous state's (deep-freeze.ts
// freezeEdited): the store's put visits what changed, not every message's entry. With secret
// checks owed, the originals' index is frozen by settleOwed instead, once the checks ran. With
// hashes owed (oweHashes), the hash and identity of each message past the previous call's (read by
// the next call only) are taken by settleHashes, after the upstream send, and the two lists frozen
// there: ~20 µs of an agent's call (its new tool output's SHA-256 and SHA-1) off the send's path.
import type { ChatMessage, Receipt } from '../types.ts';
import { contentText, messageHash } from '../ledger/message-text.ts';
import { looksSecret } from '../redaction/redact.ts';
import { hash } from 'node:crypto';
import { isElisionOf } from './elision.ts';
import { defineSlot } from '../session/stage-state.ts';
import { copyArray, copyRecord } from '../frozen-copy.ts';
import { freezeEdited, indicesFrom, isDeepFrozen } from '../deep-freeze.ts';

export const DEFAULT_MAX_ORIGINAL_BYTES = 512 * 1024;

export interface StabiliseState {
  v: 1;
  /** Hash of the agent's message per index, as last seen. */
  a: string[];
  /** Identity per index, as last seen: role, tool_call_id, tool-call ids, hash of the text (reasoning aside). */
  k?: string[];
  /** Indices where an edit that is no elision passed: contested (e.g. two agents sharing a derived
   * session id send different outputs there), never deferred again, so one agent never gets
   * another's output. */
  x?: number[];
  /** Indices where ctxgate sends the stored original instead of the agent's elided version. */
  d: number[];
  /** Content ctxgate sent, per index (tool/user observations only). */
  orig: Record<string, ChatMessage['content']>;
  bytes: number;
}

/** The stabiliser's part of the session state (stage `stabilise`). */
export const STABILISE_SLOT = defineSlot<StabiliseState>('stabilise', 1);

export interface StabiliseOptions {
  /** `false`: never defer (edits pass through); hashes are still tracked for receipts. */
  enabled?: boolean;
  maxBytes?: number;
  /** Indices below this are covered by a compacted prefix; edits there are not ours to judge. */
  frozenBelow?: number;
  /** Store new messages' originals before their secret check, listing them in `owed` for
   *  settleOwed (the stage runs it after the upstream send). Only where the originals stay within
   *  the budget whatever the checks find (else they run now): the call's messages and receipts are
   *  those of checking first. */
  oweSecretChecks?: boolean;
  /** Leave the hash and identity of the messages past the previous call's (this call reads neither)
   *  to settleHashes, with the lists' freeze: the stage runs it after the upstream send. No other
   *  stage may read or copy the state before (compaction does: the chain owes only without it). */
  oweHashes?: boolean;
}

/** What stabilise left to settleHashes: messages `from` on to hash, the lists' previous versions. */
export interface OwedHashes {
  input: readonly ChatMessage[];
  from: number;
  /** Where the lists may differ from the previous state's (their freeze sizes from there on). */
  same: number;
  prev: StabiliseState | undefined;
}

export interface StabiliseResult {
  messages: ChatMessage[];
  state: StabiliseState;
  receipts: Receipt[];
  /** With oweSecretChecks: indices whose stored original still owes its secret check (settleOwed). */
  owed?: number[];
  /** With oweHashes: what settleHashes completes (absent when nothing is owed). */
  owedHashes?: OwedHashes;
}

const STAGE = 'stabilise';

export function emptyStabilise(): StabiliseState {
  return { v: 1, a: [], d: [], orig: {}, bytes: 0 };
}

export function stabilise(
  input: ChatMessage[],
  prev: StabiliseState | undefined,
  opts: StabiliseOptions = {},
): StabiliseResult {
  const st: StabiliseState = prev ? copyOf(prev) : emptyStabilise();
  const enabled = opts.enabled !== false;
  const max = opts.maxBytes ?? DEFAULT_MAX_ORIGINAL_BYTES;
  const frozen = opts.frozenBelow ?? 0;
  const receipts: Receipt[] = [];
  const owed: number[] | undefined = opts.oweSecretChecks ? [] : undefined;
  const deferred = setOf(st.d);
  // Indices whose stored original this call added, replaced or dropped (the put sizes only those).
  const edited = new Set<number>();
  if (input.length < st.a.length) {
    receipts.push({
      stage: STAGE,
      action: 'history_truncated',
      reason: `agent sent ${input.length} messages after ${st.a.length}; state beyond dropped`,
    });
    for (let i = input.length; i < st.a.length; i++) {
      drop(st, i, edited);
      deferred.delete(i);
    }
    st.a.length = input.length;
  }
  const firstUser = input.findIndex((m) => m.role === 'user');
  // Copied at the first message replaced: an unchanged call returns the caller's array.
  let out: ChatMessage[] | undefined;
  const prevK = st.k ?? [];
  const contested = setOf(st.x);
  // The messages this call shares, object for object, with the call that wrote `prev` hash as they
  // did then (st.a[i] is their hash): only a deferred one among them is replaced again.
  const same = prev ? Math.min(sharedPrefix(input, prev), prevK.length) : 0;
  for (const i of deferred)
    if (i < same && st.orig[i] !== undefined) (out ??= input.slice())[i] = { ...input[i], content: st.orig[i] };
  st.k = copyArray(prevK);
  st.k.length = same;
  // Messages past the previous call's: only stored (their hash and identity are the next call's).
  const seen = st.a.length;
  const fresh = opts.oweHashes && seen < input.length ? Math.max(same, seen) : input.length;
  for (let i = same; i < fresh; i++) st.k[i] = identity(input[i]);
  for (let i = same; i < input.length; i++) {
    const m = input[i];
    const eligible = (m.role === 'tool' || m.role === 'user') && i > firstUser;
    if (i >= seen) {
      if (i < fresh) st.a[i] = messageHash(m);
      if (eligible) store(st, i, m.content, max, edited, owed);
      continue;
    }
    const h = messageHash(m);
    if (h === st.a[i]) {
      if (deferred.has(i) && st.orig[i] !== undefined) (out ??= input.slice())[i] = { ...m, content: st.orig[i] };
      continue;
    }
    st.a[i] = h;
    if (i < frozen) continue;
    const old = st.orig[i];
    const oldText = old === undefined ? undefined : contentText(old);
    // Same position: same role and call id; a user observation also needs the message before it unchanged.
    const kNow = st.k[i];
    const samePlace =
      prevK[i] !== undefined &&
      sameSlot(prevK[i], kNow) &&
      (m.role === 'tool' ? !!m.tool_call_id : i > 0 && prevK[i - 1] === st.k[i - 1]);
    const reduced =
      oldText !== undefined && isElisionOf(oldText, contentText(m.content), { strictlyShorter: m.role !== 'tool' });
    if (
      enabled &&
      eligible &&
      samePlace &&
      !contested.has(i) &&
      i < input.length - 1 &&
      reduced &&
      !looksSecret(oldText!)
    ) {
      deferred.add(i);
      (out ??= input.slice())[i] = { ...m, content: old };
      receipts.push({
        stage: STAGE,
        action: 'defer_elision',
        target: `message ${i}`,
        reason: 'agent elided an output already sent; re-sending it until the next compaction keeps the prefix cached',
      });
      continue;
    }
    deferred.delete(i);
    if (oldText !== undefined) contested.add(i);
    drop(st, i, edited);
    if (eligible) store(st, i, m.content, max, edited);
    const why = !enabled
      ? 'stabilisation off'
      : oldText === undefined
        ? 'no stored original'
        : eligible
          ? 'not an elision'
          : `${m.role} message edited`;
    receipts.push({
      stage: STAGE,
      action: 'edit_passed',
      target: `message ${i}`,
      reason: `history edit passed through (${why})`,
    });
  }
  // Owed checks that could change the budget pass below run now (as if checked when stored).
  if (owed !== undefined && owed.length > 0 && st.bytes > max) {
    for (const i of owed) if (looksSecret(contentText(st.orig[i]))) drop(st, i, edited);
    owed.length = 0;
  }
  // Over budget: drop the oldest non-deferred originals first, then deferred ones (which then
  // fall back to the agent's version on the next call, with a receipt then).
  if (st.bytes > max) {
    const keys = Object.keys(st.orig)
      .map(Number)
      .sort((x, y) => x - y);
    for (const pass of [false, true]) {
      for (const k of keys) {
        if (st.bytes <= max) break;
        if (deferred.has(k) !== pass || st.orig[k] === undefined) continue;
        drop(st, k, edited);
        if (pass) {
          deferred.delete(k);
          receipts.push({
            stage: STAGE,
            action: 'original_dropped',
            target: `message ${k}`,
            reason: `stored originals over ${max} bytes`,
          });
        }
      }
    }
  }
  // Unchanged and empty (the usual case): the previous state's list, frozen and sized, stays.
  st.d = deferred.size === 0 && st.d.length === 0 ? st.d : [...deferred].sort((x, y) => x - y);
  const x = [...contested].filter((i) => i < input.length).sort((a, b) => a - b);
  if (x.length) st.x = x;
  else delete st.x;
  if (prev && fresh === input.length) {
    // The lists and the originals' index are the previous ones edited from `same` on (and at
    // `edited`): frozen and sized from the previous ones' sizes, so the store's put does not
    // visit every message's entry again (deep-freeze.ts).
    freezeLists(st, prev, same);
  }
  if (prev) {
    // With checks owed, settleOwed may drop some of this call's new originals: the index stays
    // this call's own (a copy no one else holds) until then, and is frozen once, there, with
    // what it dropped, instead of frozen now and copied again there.
    if (owed !== undefined && owed.length > 0) new Unsettled(st, prev.orig, edited);
    else st.orig = freezeEdited(prev.orig, st.orig, edited);
  }
  writtenFrom(st, new WeakRef(input));
  const r: StabiliseResult = { messages: out ?? input, state: st, receipts };
  if (owed !== undefined && owed.length > 0) r.owed = owed;
  if (fresh < input.length) r.owedHashes = { input, from: fresh, same, prev };
  return r;
}

/** The lists edited from `same` on, frozen and sized from the previous state's (deep-freeze.ts). */
function freezeLists(st: StabiliseState, prev: StabiliseState, same: number): void {
  st.a = freezeEdited(prev.a, st.a, indicesFrom(prev.a, st.a, same));
  if (prev.k && st.k) st.k = freezeEdited(prev.k, st.k, indicesFrom(prev.k, st.k, same));
}

/**
 * Takes the hashes and identities stabilise owed (oweHashes) into `st`, the state it returned (or
 * settleOwed's copy of it, which shares its lists), then freezes the lists as stabilise would
 * have: the same state as stabilise without oweHashes gives. O(new messages' text).
 */
export function settleHashes(st: StabiliseState, owed: OwedHashes): void {
  const { input, from, same, prev } = owed;
  const k = st.k!;
  for (let i = from; i < input.length; i++) {
    st.a[i] = messageHash(input[i]);
    k[i] = identity(input[i]);
  }
  if (prev) freezeLists(st, prev, same);
}

/**
 * Runs the secret checks stabilise owed (oweSecretChecks) on `cur`, the stabiliser's state as it
 * stands after the call's stages (compaction may have dropped originals since): an original that
 * looks secret is dropped, as if never stored. `cur` itself when none does (the usual case), else
 * a copy; or `cur` settled in place when it is the state stabilise returned, its originals' index
 * left unfrozen for this (then frozen here). O(owed originals' text).
 */
export function settleOwed(cur: StabiliseState, owed: readonly number[]): StabiliseState {
  const unsettled = Unsettled.take(cur);
  if (unsettled !== undefined && Object.isExtensible(cur.orig)) {
    // The state stabilise returned with its originals' index still its own (see stabilise): the
    // secret ones dropped in place, then the index frozen and sized from the previous state's
    // with every key this call changed. The same state as the copy below gives.
    for (const i of owed) {
      const c = cur.orig[i];
      if (c !== undefined && looksSecret(contentText(c))) drop(cur, i, unsettled.edited);
    }
    cur.orig = freezeEdited(unsettled.prev, cur.orig, unsettled.edited);
    return cur;
  }
  let st: StabiliseState | undefined;
  const edited = new Set<number>();
  for (const i of owed) {
    const c = cur.orig[i];
    if (c === undefined || !looksSecret(contentText(c))) continue;
    st ??= { ...cur, orig: copyRecord(cur.orig) };
    drop(st, i, edited);
  }
  if (st === undefined) return cur;
  if (isDeepFrozen(cur.orig)) st.orig = freezeEdited(cur.orig, st.orig, edited);
  const from = WrittenFrom.of(cur);
  if (from !== undefined) writtenFrom(st, from);
  return st;
}

/** `new Base(o)` returns `o` itself, so a subclass's private fields are installed on `o`. */
class Base {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: returning `o` is the idiom (fields land on `o`).
    return o as Base;
  }
}

/**
 * The messages array a state was written from, in this process, kept on the state object itself
 * in a private class field (invisible to keys, JSON, spread and clones; deep-freeze.ts does the
 * same for sizes) rather than in a WeakMap: a WeakMap gaining a new key every call is an
 * ephemeron table that costs ~1-2 µs a set under churn, plus its processing in every GC. The
 * array is held weakly (the pipeline's local LRU keeps a session's last request; an array it
 * dropped only costs the full loop), and never changed in place by anyone (stages copy on write).
 */
class WrittenFrom extends Base {
  #from: WeakRef<readonly ChatMessage[]>;
  constructor(st: StabiliseState, from: WeakRef<readonly ChatMessage[]>) {
    super(st);
    this.#from = from;
  }
  static of(st: StabiliseState): WeakRef<readonly ChatMessage[]> | undefined {
    return #from in st ? (st as unknown as WrittenFrom).#from : undefined;
  }
  static set(st: StabiliseState, from: WeakRef<readonly ChatMessage[]>): void {
    (st as unknown as WrittenFrom).#from = from;
  }
}

/**
 * A state whose originals' index stabilise left unfrozen for settleOwed (checks owed): the
 * previous state's index it was copied from and the keys this call changed there. A private
 * field on the state, like WrittenFrom; taken once (a second settle finds it gone).
 */
class Unsettled extends Base {
  #prev: StabiliseState['orig'] | undefined;
  #edited: Set<number> | undefined;
  constructor(st: StabiliseState, prev: StabiliseState['orig'], edited: Set<number>) {
    super(st);
    this.#prev = prev;
    this.#edited = edited;
  }
  static take(st: StabiliseState): { prev: StabiliseState['orig']; edited: Set<number> } | undefined {
    if (!(#prev in st)) return undefined;
    const u = st as unknown as Unsettled;
    const prev = u.#prev;
    const edited = u.#edited;
    if (prev === undefined || edited === undefined) return undefined;
    u.#prev = undefined;
    u.#edited = undefined;
    return { prev, edited };
  }
}

/** Remembers the array `st` was written from (a state this module made: fresh, so extensible;
 * one that is not only costs its next call the full loop). */
function writtenFrom(st: StabiliseState, from: WeakRef<readonly ChatMessage[]>): void {
  if (WrittenFrom.of(st) !== undefined) WrittenFrom.set(st, from);
  else if (Object.isExtensible(st)) new WrittenFrom(st, from);
}

/** How many leading messages of `input` are the very objects the call that wrote `prev` saw. */
function sharedPrefix(input: readonly ChatMessage[], prev: StabiliseState): number {
  const before = WrittenFrom.of(prev)?.deref();
  if (before === undefined) return 0;
  const n = Math.min(input.length, before.length);
  let i = 0;
  while (i < n && input[i] === before[i]) i++;
  return i;
}

/** The indices of a stored list as a set, in its order. A loop, not `new Set(list)`: the lists are
 * frozen (shared with the stored state), and the Set constructor takes a frozen array through
 * the generic iteration protocol, slower than adding its few items one by one. */
function setOf(list: readonly number[] | undefined): Set<number> {
  const out = new Set<number>();
  if (list !== undefined) for (let i = 0; i < list.length; i++) out.add(list[i]);
  return out;
}

/** A copy the caller may change: arrays and the originals' index copied, the originals shared. */
function copyOf(p: StabiliseState): StabiliseState {
  // `d` and `x` are only read, then replaced (never changed in place): shared.
  return { ...p, a: copyArray(p.a), orig: copyRecord(p.orig) };
}

const identities = new WeakMap<ChatMessage, string>();

/** role, tool_call_id, tool-call ids, then a hash of the text: equal slots share the first three. */
function identity(m: ChatMessage): string {
  let k = identities.get(m);
  if (k === undefined) {
    k = identityOf(m);
    identities.set(m, k);
  }
  return k;
}

function identityOf(m: ChatMessage): string {
  const ids = (m.tool_calls ?? []).map((c) => c.id).join(',');
  const text = hash('sha1', contentText(m.content), 'base64').slice(0, 12);
  return `${m.role}\u0000${m.tool_call_id ?? ''}\u0000${ids}\u0000${text}`;
}

const slotOf = (k: string): string => k.slice(0, k.lastIndexOf('\u0000'));
const sameSlot = (a: string, b: string): boolean => slotOf(a) === slotOf(b);

function size(c: ChatMessage['content']): number {
  return typeof c === 'string' ? c.length : JSON.stringify(c ?? null).length;
}

function store(
  st: StabiliseState,
  i: number,
  c: ChatMessage['content'],
  max: number,
  edited?: Set<number>,
  owed?: number[],
): void {
  // Secrets are never persisted, so they can never be resurrected either (an owed check runs
  // before the state is stored: settleOwed).
  if (size(c) > max) return;
  if (owed !== undefined) owed.push(i);
  else if (looksSecret(contentText(c))) return;
  // Parts content is copied: the stored state is frozen once put, the request's message is not ours to freeze.
  st.orig[i] = typeof c === 'string' ? c : structuredClone(c);
  st.bytes += size(c);
  edited?.add(i);
}

function drop(st: StabiliseState, i: number, edited?: Set<number>): void {
  const c = st.orig[i];
  if (c === undefined) return;
  st.bytes -= size(c);
  delete st.orig[i];
  edited?.add(i);
}

/** After a compaction at `watermark`, originals below it are no longer needed. */
export function forgetBelow(prev: StabiliseState, watermark: number): StabiliseState {
  const st = copyOf(prev);
  for (const k of Object.keys(st.orig).map(Number)) if (k < watermark) drop(st, k);
  st.d = st.d.filter((k) => k >= watermark);
  return st;
}
