// Batch compaction with watermarks (docs/architecture.md, "Compaction" and "Checkpoints"). When the prompt reaches τ_high·M*, the
// history between the pinned root/task and the latest K calls is replaced, in one batch, by a
// checkpoint message whose digest is built cheapest-first (lossless → extraction → pointers →
// ranges → optional summary) until the prompt fits τ_low·M*. The verbatim set of everything
// evicted must survive and the checkpoint must pass its audit, or nothing changes (receipt).
// Between compactions the stored prefix is re-sent byte-identically while the agent's
// originals for those indices are unchanged (checked by hash; elision markers tolerated).
// Pure over (messages, state, opts); async only for the artifact store and summariser.
import type { ChatMessage, Receipt } from '../types.ts';
import { sha256Hex } from '../canonical-json.ts';
import { callCount, callsRecord } from '../ledger/call-log.ts';
import { DEFAULT_MAX_CALL_RECORDS } from '../ledger/ledger.ts';
import type { LedgerState } from '../ledger/types.ts';
import { approxTokens, messageHash, messageText, messageTokens, type CountTokens } from '../ledger/message-text.ts';
import { parseExitCode } from '../ledger/semantics.ts';
import { scanCalls } from './calls.ts';
import { fingerprintOf, isElisionOfFingerprint, looksLikeMarker, type Fingerprint } from '../stabilise/elision.ts';
import { redact } from '../redaction/redact.ts';
import { auditCheckpoint, makeCheckpoint, renderCheckpoint, type Checkpoint, type Milestone } from './checkpoint.ts';
import {
  losslessText,
  mergeRange,
  renderDigest,
  renderEntry,
  shortLabel,
  THOUGHT_CHARS,
  type DigestEntry,
} from './digest.ts';
import { constraintLines, keptList, KEPT_SEP, missingFrom, occursIn, shownText, verbatimSet } from './verbatim.ts';
import { defineSlot } from '../session/stage-state.ts';

export const DEFAULT_HIGH = 0.8;
export const DEFAULT_LOW = 0.5;
export const DEFAULT_KEEP_LAST_CALLS = 4;
export const MAX_ARTIFACT_REFS = 256;
/** Share of τ_low the verbatim tail may take before fewer recent calls are kept. */
export const FIXED_SHARE = 0.8;
/** Milestones shown in the header when the pinned part and tail already fill τ_low. */
export const TIGHT_MILESTONES = 3;
/** Share of M* from which a compaction that cannot reach τ_low is accepted up to τ_high. */
export const BEST_EFFORT_FROM = 0.9;
const STAGE = 'compaction';

export interface CompactionOptions {
  /** Working-set budget M* in tokens; absent or 0 turns compaction off. */
  budgetTokens?: number;
  high?: number;
  low?: number;
  keepLastCalls?: number;
  countTokens?: CountTokens;
  /** Ledger state of this call (exit codes, reads, stale marks). */
  ledger?: LedgerState;
  /** Tenant-bound artifact store for full evicted outputs. */
  artifacts?: { put(content: string): Promise<string>; get(hash: string): Promise<string | undefined> };
  /** Optional upstream summariser (off by default). */
  summarise?: (prompt: string) => Promise<string>;
  checkpointRole?: 'user' | 'system';
  /** Append the identifiers the digest would otherwise drop (default true). */
  keepIdentifiersLine?: boolean;
  /** When τ_low cannot be reached and the prompt is at BEST_EFFORT_FROM·M* or more, accept a
   * result up to τ_high with a `compacted_above_low` receipt instead of refusing (default
   * true): a refusal would leave the prompt growing past M* on every later call. */
  bestEffort?: boolean;
  /** The agent's own messages (before stabilisation/tombstones), same indices as the input:
   * the compacted prefix is bound to their hashes. Defaults to the input. */
  rawInput?: ChatMessage[];
  /** Alternatively the hashes of the agent's messages (stabilise state `a`), same indices. */
  rawHashes?: string[];
}

export interface CompactionState {
  v: 1;
  n: number;
  /** Agent message index where the verbatim tail starts. */
  watermark: number;
  /** messageHash of the agent's messages [0, watermark). */
  hashes: string[];
  /** Text length of the agent's messages [0, watermark): a shorter resend there is an elision. */
  sizes?: number[];
  /** Elision fingerprints (elision.ts) of the agent's tool/user messages [0, watermark), null
   * for other roles: a head/tail truncation whose marker outweighs a tiny output is an elision. */
  fingerprints?: (Fingerprint | null)[];
  /** Messages [0, pinnedEnd) are the pinned root and task, re-sent from the agent's own copy
   * (hash-checked) so they are never persisted here. */
  pinnedEnd: number;
  /** The checkpoint message that replaces messages [pinnedEnd, watermark). */
  checkpointMessage?: ChatMessage;
  entries: DigestEntry[];
  /** Absent until the first compaction (a state may only carry a refusal mark). */
  checkpoint?: Checkpoint;
  constraints: string[];
  /** Items of the checkpoint's own `Kept identifiers:` line (owed again at the next compaction). */
  kept?: string[];
  /** Prompt tokens at the last refusal; no retry until the prompt grows past it. */
  refusedAt?: number;
}

/** Compaction's part of the session state (stage `compaction`). */
export const COMPACTION_SLOT = defineSlot<CompactionState>('compaction', 1);

export interface CompactionResult {
  messages: ChatMessage[];
  state: CompactionState | undefined;
  receipts: Receipt[];
  /** Set when a new compaction happened on this call. */
  compacted?: { watermark: number; tokensBefore: number; tokensAfter: number };
}

export async function compactMessages(
  input: ChatMessage[],
  prev: CompactionState | undefined,
  opts: CompactionOptions,
): Promise<CompactionResult> {
  const count = opts.countTokens ?? approxTokens;
  const receipts: Receipt[] = [];
  let st = prev ? structuredClone(prev) : undefined;
  const raw = opts.rawInput && opts.rawInput.length === input.length ? opts.rawInput : input;
  const rawHashes = opts.rawHashes && opts.rawHashes.length === input.length ? opts.rawHashes : undefined;
  if (st && !prefixStillValid(raw, st, rawHashes)) {
    receipts.push({
      stage: STAGE,
      action: 'reset',
      reason: `agent history below message ${st.watermark} changed since compaction ${st.n}; compacted prefix dropped`,
    });
    st = undefined;
  }
  const view =
    st && st.checkpointMessage
      ? [...input.slice(0, st.pinnedEnd), st.checkpointMessage, ...input.slice(st.watermark)]
      : input;
  const M = opts.budgetTokens ?? 0;
  if (!M) return { messages: view, state: st, receipts };
  const tokens = sumTokens(view, count);
  const high = (opts.high ?? DEFAULT_HIGH) * M;
  if (tokens < high) return { messages: view, state: st, receipts };
  // After a refusal, wait for 0.1·M* of growth — except near M*, where every call tries again
  // (best effort): waiting there would let the prompt grow past M*.
  const nearM = opts.bestEffort !== false && tokens >= BEST_EFFORT_FROM * M;
  if (st?.refusedAt !== undefined && tokens < st.refusedAt + 0.1 * M && !nearM)
    return { messages: view, state: st, receipts };
  const r = await compactOnce(input, raw, rawHashes, st, view, tokens, opts, count);
  receipts.push(...r.receipts);
  if (!r.state) {
    const keep: CompactionState = st
      ? { ...st, refusedAt: tokens }
      : { v: 1, n: 0, watermark: 0, pinnedEnd: 0, hashes: [], entries: [], constraints: [], refusedAt: tokens };
    return { messages: view, state: keep, receipts };
  }
  return { messages: r.messages, state: r.state, receipts, compacted: r.compacted };
}

function prefixStillValid(input: ChatMessage[], st: CompactionState, rawHashes?: string[]): boolean {
  if (input.length < st.watermark) return false;
  for (let i = 0; i < st.watermark; i++) {
    const h = rawHashes?.[i] ?? messageHash(input[i]);
    if (h === st.hashes[i]) continue;
    const m = input[i];
    // Agents eliding outputs we already compacted away change nothing we send: an elision of the
    // fingerprinted text (what it keeps of its head or tail plus a marker, whatever its wording;
    // the marker may outweigh a tiny output). Another message in that slot (an agent that
    // reorders or rewrites its history) is no elision: its text was never compacted, so the prefix
    // is dropped. States from before fingerprints: any shorter text, or a marker-sized one.
    const text = messageText(m);
    const fps = st.fingerprints;
    const elided = fps
      ? !!fps[i] && isElisionOfFingerprint(fps[i]!, text, { strictlyShorter: m.role !== 'tool' })
      : st.sizes?.[i] !== undefined
        ? text.length < st.sizes[i]
        : looksLikeMarker(text);
    if ((m.role === 'tool' || m.role === 'user') && elided && i > 1) {
      st.hashes[i] = h;
      continue;
    }
    return false;
  }
  return true;
}

function sumTokens(ms: ChatMessage[], count: CountTokens): number {
  return ms.reduce((n, m) => n + messageTokens(m, count), 0);
}

async function compactOnce(
  input: ChatMessage[],
  raw: ChatMessage[],
  rawHashes: string[] | undefined,
  st: CompactionState | undefined,
  view: ChatMessage[],
  tokensBefore: number,
  opts: CompactionOptions,
  count: CountTokens,
): Promise<{
  messages: ChatMessage[];
  state?: CompactionState;
  receipts: Receipt[];
  compacted?: CompactionResult['compacted'];
}> {
  const refuse = (reason: string) => ({
    messages: view,
    receipts: [{ stage: STAGE, action: 'refused', tokens_before: tokensBefore, reason }],
  });
  const M = opts.budgetTokens!;
  const target = (opts.low ?? DEFAULT_LOW) * M;
  // Best effort only once the prompt nears M* itself (a refusal at τ_high retries at
  // τ_high + 0.1·M*): below that a refusal still leaves the prompt within budget and waiting
  // keeps the cached prefix longer; past it, anything under τ_high beats growing past M*.
  const ceiling =
    opts.bestEffort === false || tokensBefore < BEST_EFFORT_FROM * M ? target : (opts.high ?? DEFAULT_HIGH) * M;
  const K = Math.max(1, opts.keepLastCalls ?? DEFAULT_KEEP_LAST_CALLS);
  const firstUser = input.findIndex((m) => m.role === 'user');
  if (firstUser < 0) return refuse('no user task to pin');
  const pinnedEnd = firstUser + 1;
  const start = st && st.n > 0 ? st.watermark : pinnedEnd;
  const assistants = input.map((m, i) => (m.role === 'assistant' && i >= start ? i : -1)).filter((i) => i >= 0);
  if (assistants.length <= 1) return refuse('no call to compact since the last compaction point');
  // Keep the latest K calls verbatim; when they alone exceed the room under τ_low, keep fewer
  // (never fewer than one) rather than refuse forever.
  const headTokens = sumTokens(input.slice(0, pinnedEnd), count);
  let keep = Math.min(K, assistants.length - 1);
  let W = assistants[assistants.length - keep];
  let fixedTokens = headTokens + sumTokens(input.slice(W), count);
  while (keep > 1 && fixedTokens >= FIXED_SHARE * target) {
    keep--;
    W = assistants[assistants.length - keep];
    fixedTokens = headTokens + sumTokens(input.slice(W), count);
  }
  if (fixedTokens >= ceiling)
    return refuse(
      `pinned root, task and latest ${keep} call(s) alone take ${fixedTokens} tokens ≥ ${Math.floor(ceiling)}`,
    );
  const head = input.slice(0, pinnedEnd);
  const tail = input.slice(W);

  // Build entries for the newly compacted calls; older entries come from the previous batch.
  const ledger = opts.ledger;
  const calls = scanCalls(input);
  const fresh = calls.filter((c) => c.assistantIndex >= start && c.assistantIndex < W);
  const entries: DigestEntry[] = (st?.entries ?? []).map((e) => ({ ...e }));
  const seenHash = new Map<string, number>();
  for (const e of entries) if (e.hash && e.level < 3) seenHash.set(e.hash, e.from);
  const artifacts: Record<string, string> = { ...(st?.checkpoint?.artifacts ?? {}) };
  const evictedTexts: string[] = st?.checkpointMessage ? [messageText(st.checkpointMessage)] : [];
  const regionUserTexts: string[] = [];
  for (let i = start; i < W; i++) {
    const m = input[i];
    if (m.role === 'user' && !fresh.some((c) => c.result === m)) regionUserTexts.push(redact(messageText(m)).text);
  }
  for (const c of fresh) {
    // Everything that enters the digest is persisted: redact first. The verbatim set is taken
    // on the redacted text, so a secret is never something the digest must keep.
    const rawOut = c.result ? messageText(c.result) : '';
    const out = redact(rawOut).text;
    c.thought = redact(c.thought).text;
    c.label = redact(c.label).text;
    evictedTexts.push(c.thought, c.label, out);
    const hash = sha256Hex(rawOut);
    const obs = ledger?.observations.find((o) => o.id === c.id);
    let pointer: string | undefined;
    if (obs?.stale) pointer = `stale: ${obs.stale.reason}${obs.stale.byCall ? ` by call ${obs.stale.byCall}` : ''}`;
    else if (seenHash.has(hash) && out.length > 80) pointer = `identical to the output of #${seenHash.get(hash)}`;
    else if (obs && obs.reads.length && obs.writes.length === 0) {
      const newer = ledger!.observations.find(
        (o) => o.call > obs.call && o.label === obs.label && o.writes.length === 0,
      );
      if (newer) pointer = `superseded by the same read at #${newer.call}`;
    }
    if (!seenHash.has(hash)) seenHash.set(hash, c.call);
    if (opts.artifacts && out.length > 0) {
      artifacts[`call:${c.id}`] = await opts.artifacts.put(rawOut);
    }
    entries.push({
      from: c.call,
      to: c.call,
      id: c.id,
      label: shortLabel(c.label),
      exit: c.result ? parseExitCode(out) : null,
      level: 0,
      text: losslessText(out),
      ...(pointer ? { pointer } : {}),
      thought: c.thought ? c.thought.slice(0, THOUGHT_CHARS) : undefined,
      lines: out.split('\n').length,
      hash,
      verbatim: verbatimSet(`${c.thought}\n${c.label}\n${out}`),
    });
  }
  for (const u of regionUserTexts) evictedTexts.push(u);

  // Checkpoint: goal, constraints (schema partition: never lossy), milestones, hypothesis.
  const task = redact(messageText(input[firstUser])).text;
  const taskConstraints = constraintLines(task);
  const constraints = [
    ...new Set([...(st?.constraints ?? []), ...taskConstraints, ...regionUserTexts.flatMap(constraintLines)]),
  ];
  const ledgerCalls: Record<string, readonly [number, number | null, string]> = ledger
    ? callsRecord(ledger.calls)
    : Object.fromEntries(
        fresh
          .filter((c) => c.result)
          .map(
            (c) => [c.id, [c.call, parseExitCode(messageText(c.result!)), sha256Hex(messageText(c.result!))]] as const,
          ),
      );
  const milestones: Milestone[] = carriedMilestones(st?.checkpoint?.milestones ?? [], ledger, ledgerCalls);
  for (const c of fresh) {
    const rec = ledgerCalls[c.id];
    if (!rec) continue;
    const isMilestone =
      rec[1] !== null &&
      (rec[1] !== 0 || /\b(pytest|test|make|cargo|go test|npm|tsc|patch|apply|sed -i|>)\b/.test(c.label));
    if (isMilestone)
      milestones.push({
        id: c.id,
        call: rec[0],
        command: shortLabel(c.label).slice(0, 100),
        exit: rec[1],
        hash: rec[2],
      });
  }
  const lastThought =
    [...fresh]
      .reverse()
      .find((c) => c.thought)
      ?.thought.slice(0, THOUGHT_CHARS) ??
    st?.checkpoint?.hypothesis ??
    '';
  const refs = Object.entries(artifacts).slice(-MAX_ARTIFACT_REFS);
  const cp = makeCheckpoint({
    n: (st?.n ?? 0) + 1,
    goal:
      task
        .split('\n')
        .find((l) => l.trim())
        ?.trim()
        .slice(0, 300) ?? '',
    goalHash: sha256Hex(task),
    milestones,
    hypothesis: lastThought,
    constraints,
    artifacts: Object.fromEntries(refs),
    calls: [entries[0]?.from ?? 1, entries[entries.length - 1]?.to ?? 1],
  });

  // Fit the digest: downgrade oldest-first, one level at a time, until it fits τ_low. An
  // identifier the pinned task, the verbatim tail or the header shows needs no kept entry.
  const role = opts.checkpointRole ?? 'user';
  const headOut = view.slice(0, pinnedEnd);
  const headShown = headOut.map(shownText).join('\n');
  let headerText = renderCheckpoint(cp, { shown: headShown });
  // No room left under τ_low: the header shows only the latest few milestones (the digest's
  // entries still name every call and its exit; the record keeps them all for the audit).
  if (target - fixedTokens - count(headerText) < 0)
    headerText = renderCheckpoint(cp, { shown: headShown, maxMilestones: TIGHT_MILESTONES });
  const around = `${headShown}\n${tail.map(shownText).join('\n')}\n${headerText}`;
  const elsewhere = (v: string): boolean => occursIn(v, around);
  const budget = target - fixedTokens - count(headerText) - 16;
  const keepIds = opts.keepIdentifiersLine !== false;
  const cost = (e: DigestEntry): number => count(renderEntry(e, keepIds, elsewhere)) + 1;
  let total = entries.reduce((n, e) => n + cost(e), 0);
  for (const lvl of [1, 2] as const) {
    for (const e of entries) {
      if (total <= budget) break;
      if (e.level >= lvl) continue;
      const before = cost(e);
      e.level = lvl;
      if (lvl === 2) delete e.text;
      total += cost(e) - before;
    }
  }
  let merged = entries;
  while (total > budget && merged.filter((e) => e.level >= 2).length > 1) {
    const low = merged.findIndex((e) => e.level >= 2);
    let end = low;
    while (end + 1 < merged.length && merged[end + 1].level >= 2) end++;
    // Merge the oldest half of the run (at least two) into one range entry.
    const take = Math.max(2, Math.ceil((end - low + 1) / 2));
    const run = merged.slice(low, low + take);
    if (run.length < 2) break;
    const range = mergeRange(run);
    total += cost(range) - run.reduce((n, e) => n + cost(e), 0);
    merged = [...merged.slice(0, low), range, ...merged.slice(low + take)];
  }
  // Entry costs above are upper bounds; the rendered digest also drops identifiers an earlier
  // entry already listed.
  let digest = renderDigest(merged, keepIds, elsewhere);
  total = count(digest);
  if (total > budget && opts.summarise) {
    const summary = (await opts.summarise(summaryPrompt(digest))).trim();
    const kept = keptList(
      missingFrom(new Set(merged.flatMap((e) => e.verbatim)), summary).filter((v) => !elsewhere(v)),
    );
    digest = `Summary (model-written):\n${summary}${kept.length && keepIds ? `\n  kept: ${kept.join(KEPT_SEP)}` : ''}`;
    total = count(digest);
  }
  if (total > budget + (ceiling - target))
    return refuse(`digest needs ${Math.ceil(total)} tokens, budget to τ_low is ${Math.floor(budget)} after all levels`);

  let cpText = `${headerText}\nHistory:\n${digest}`;
  const outText = (text: string): string => [...headOut, { role, content: text }, ...tail].map(shownText).join('\n');
  // Owed: the verbatim set of everything evicted now, of the previous checkpoint, and the
  // items the previous checkpoint itself listed (its kept lines are not re-extracted).
  const V = new Set([...evictedTexts.flatMap((t) => verbatimSet(t)), ...(st?.kept ?? [])]);
  let missing = missingFrom(V, outText(cpText));
  let keptExtra: string[] = [];
  if (missing.length && keepIds) {
    keptExtra = keptList(missing);
    cpText += `\nKept identifiers: ${keptExtra.join(KEPT_SEP)}`;
    missing = missingFrom(V, outText(cpText));
  }
  if (missing.length)
    return refuse(`verbatim set would lose ${missing.length} item(s), e.g. ${missing.slice(0, 3).join(', ')}`);

  const audit = await auditCheckpoint(cp, {
    calls: ledgerCalls,
    taskConstraints,
    resolve: opts.artifacts ? (h) => opts.artifacts!.get(h) : undefined,
  });
  if (!audit.ok) return refuse(`checkpoint audit failed: ${audit.problems.slice(0, 3).join('; ')}`);

  const cpMsg: ChatMessage = { role, content: cpText };
  const messages = [...headOut, cpMsg, ...tail];
  const tokensAfter = sumTokens(messages, count);
  if (tokensAfter > ceiling) return refuse(`compacted prompt is ${tokensAfter} tokens > ${Math.floor(ceiling)}`);
  const aboveLow = tokensAfter > target;
  const levels = [0, 1, 2, 3].map((l) => merged.filter((e) => e.level === l).length);
  const state: CompactionState = {
    v: 1,
    n: cp.n,
    watermark: W,
    hashes: rawHashes ? rawHashes.slice(0, W) : raw.slice(0, W).map(messageHash),
    sizes: [
      ...(st?.sizes ?? []).slice(0, start),
      ...raw.slice(st?.sizes ? start : 0, W).map((m) => messageText(m).length),
    ].slice(0, W),
    fingerprints: [
      ...(st?.fingerprints ?? []).slice(0, start),
      ...raw
        .slice(st?.fingerprints ? start : 0, W)
        .map((m) => (m.role === 'tool' || m.role === 'user' ? fingerprintOf(messageText(m)) : null)),
    ].slice(0, W),
    pinnedEnd,
    checkpointMessage: cpMsg,
    entries: merged,
    checkpoint: cp,
    constraints,
    ...(keptExtra.length ? { kept: keptExtra } : {}),
  };
  return {
    messages,
    state,
    compacted: { watermark: W, tokensBefore, tokensAfter },
    receipts: [
      {
        stage: STAGE,
        action: aboveLow ? 'compacted_above_low' : 'compacted',
        target: `messages ${start}–${W - 1}`,
        tokens_before: tokensBefore,
        tokens_after: tokensAfter,
        reason: `τ_high reached${aboveLow ? `; τ_low ${Math.floor(target)} unreachable (pinned root/task/tail), best effort` : ''}; latest ${keep} call(s) kept verbatim${keep < K ? ` (of ${K}: they alone neared τ_low)` : ''}; checkpoint ${cp.n} audited; entries lossless ${levels[0]}, extracted ${levels[1]}, pointer ${levels[2]}, ranges ${levels[3]}; verbatim set ${V.size} kept`,
      },
    ],
  };
}

function summaryPrompt(digest: string): string {
  return [
    'Summarise this coding-agent history for the agent itself. Use exactly these sections:',
    'DONE: (what was changed, with file paths)',
    'RULED OUT: (what failed or was disproved, with error codes and failing assertions)',
    'OPEN: (what remains)',
    'Copy every file path, line number, identifier, hash and error code verbatim. Do not invent anything.',
    '',
    digest,
  ].join('\n');
}

/**
 * The previous checkpoint's milestones that this one carries: all of them, but those whose record
 * the ledger's record bound has dropped since (the ledger is full and the milestone's call is older
 * than every record it keeps). Those were audited when they were made and can no longer be; kept,
 * they would fail every later audit ("not in the ledger") and so refuse every later compaction of
 * the session. A missing record the ledger should still hold stays an audit failure. O(records)
 * when the ledger is full (callsRecord, just before, is too), else O(milestones).
 */
function carriedMilestones(
  prev: readonly Milestone[],
  ledger: LedgerState | undefined,
  calls: Readonly<Record<string, unknown>>,
): Milestone[] {
  if (!ledger || prev.length === 0 || callCount(ledger.calls) < DEFAULT_MAX_CALL_RECORDS) return [...prev];
  let oldest = Number.POSITIVE_INFINITY;
  for (const c of ledger.calls) for (const r of c) if (r[1] < oldest) oldest = r[1];
  return prev.filter((m) => m.call >= oldest || calls[m.id] !== undefined);
}
