// Runs context strategies over the same sessions and measures what can be measured exactly
// without a model (docs/architecture.md, "Measuring a context strategy"): staged tokens, compression ratio, prefix-cache hit rate and
// prefill, input cost, verbatim retention, constraint retention across compactions, stale
// exposure. Ground truth for staleness is the observation ledger over the raw history.
// Verbatim retention uses compaction's own definition (middleware/compaction/verbatim.ts): the
// items of every raw message as first sent, present (occursIn) in the staged prompt's text.
// O(calls × messages) per strategy with memoised tokenisation, verbatim sets and per-message
// item hits (each staged message is tested once per new item).
import { constraintLines, messageVerbatim, occursIn, shownText } from '../../middleware/compaction/verbatim.ts';
import { applyLedger } from '../../middleware/ledger/ledger.ts';
import type { LedgerState } from '../../middleware/ledger/types.ts';
import type { ChatMessage } from '../../middleware/types.ts';
import type { Session } from '../formats/types.ts';
import { costUsd } from '../replay/pricing.ts';
import type { Pricing } from '../replay/types.ts';
import { messageKey, TokenModel } from './token-model.ts';
import { textOf, type Strategy, type StagedView } from './types.ts';

export interface StrategyResult {
  strategy: string;
  sessions: number;
  calls: number;
  budget: number;
  raw_tokens: number;
  staged_tokens: number;
  staged_tokens_per_call: { mean: number; max: number };
  over_budget_calls: number;
  compression_ratio: number;
  cached_tokens: number;
  hit_rate: number;
  /** Hit rate over calls that extend the previous call's staged prompt (between compactions). */
  hit_rate_between_compactions: number;
  prefill_tokens: number;
  cost_usd: number;
  verbatim_retention: number;
  compactions: number;
  constraint_retention: number;
  stale_exposure_calls: number;
  stale_exposure_rate: number;
}

export interface EvaluatorOptions {
  /** Count the previous call's completion as cached (engines keep decoded blocks; default off). */
  cacheCompletions?: boolean;
}

interface Acc {
  betweenCached: number;
  betweenStaged: number;
  calls: number;
  raw: number;
  staged: number;
  max: number;
  over: number;
  cached: number;
  verbatimSum: number;
  compactions: number;
  constraintSum: number;
  exposed: number;
}

const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

export class StrategyEvaluator {
  private readonly vMemo = new Map<string, string[]>();
  constructor(
    private readonly tokens: TokenModel,
    private readonly budget: number,
    readonly pricing: Pricing,
    private readonly opts: EvaluatorOptions = {},
  ) {}

  private verbatimOf(m: ChatMessage): string[] {
    const k = messageKey(m);
    let v = this.vMemo.get(k);
    if (!v) {
      v = messageVerbatim(m);
      this.vMemo.set(k, v);
    }
    return v;
  }

  async evaluate(strategy: Strategy, sessions: Session[]): Promise<StrategyResult> {
    const acc: Acc = {
      betweenCached: 0,
      betweenStaged: 0,
      calls: 0,
      raw: 0,
      staged: 0,
      max: 0,
      over: 0,
      cached: 0,
      verbatimSum: 0,
      compactions: 0,
      constraintSum: 0,
      exposed: 0,
    };
    const count = (t: string) => this.tokens.count(t);
    for (const s of sessions) {
      const run = strategy.start({ budget: this.budget, count });
      let truth: LedgerState | undefined;
      let prevSeq: (readonly number[])[] | undefined;
      let prevKeys: string[] | undefined;
      let prevRawLen = 0;
      const rawV = new RetainedItems();
      let rawSeen = 0;
      const task = s.calls[0]?.body.messages.find((m) => m.role === 'user');
      const constraints = task ? constraintLines(textOf(task)) : [];
      for (const call of s.calls) {
        const raw = call.body.messages;
        truth = applyLedger(raw, truth, { eviction: false, countTokens: count, now: 0 }).state;
        const view = await run.stage(
          raw,
          call.body.tools?.length ? TokenModel.total(this.tokens.sequence([], call.body.tools)) : 0,
          call.body.tools,
        );
        const seq = this.tokens.sequence(view.messages, view.tools ?? call.body.tools);
        const staged = TokenModel.total(seq);
        acc.calls++;
        acc.raw += TokenModel.total(this.tokens.sequence(raw, call.body.tools));
        acc.staged += staged;
        acc.max = Math.max(acc.max, staged);
        if (staged > this.budget) acc.over++;
        // Engines also cache the blocks they decoded: the previous call's completion (the
        // assistant message this request adds right after the previous prompt) when asked to.
        const completion = this.opts.cacheCompletions && prevSeq ? raw[prevRawLen] : undefined;
        const prevFull =
          prevSeq && completion?.role === 'assistant' ? [...prevSeq, this.tokens.ids(messageKey(completion))] : prevSeq;
        const cached = this.tokens.cachedTokens(prevFull, seq);
        acc.cached += cached;
        prevSeq = seq;
        prevRawLen = raw.length;
        // verbatim retention against everything the raw history has shown so far
        if (rawSeen > raw.length) rawSeen = 0;
        for (let i = rawSeen; i < raw.length; i++) rawV.add(this.verbatimOf(raw[i]));
        rawSeen = raw.length;
        acc.verbatimSum += rawV.size ? rawV.retainedBy(view.messages) / rawV.size : 1;
        // a compaction: the staged history is no longer an extension of the previous one
        const keys = view.messages.map(messageKey);
        const compacted =
          prevKeys !== undefined && (keys.length < prevKeys.length || prevKeys.some((k, i) => keys[i] !== k));
        if (prevKeys && !compacted) {
          acc.betweenCached += cached;
          acc.betweenStaged += staged;
        }
        if (compacted) {
          acc.compactions++;
          const text = view.messages.map(shownText).join('\n');
          acc.constraintSum += constraints.length
            ? constraints.filter((c) => text.includes(c)).length / constraints.length
            : 1;
        }
        prevKeys = keys;
        if (this.exposed(truth, view)) acc.exposed++;
      }
    }
    const cached = acc.cached;
    return {
      strategy: strategy.name,
      sessions: sessions.length,
      calls: acc.calls,
      budget: this.budget,
      raw_tokens: acc.raw,
      staged_tokens: acc.staged,
      staged_tokens_per_call: { mean: Math.round(acc.staged / Math.max(1, acc.calls)), max: acc.max },
      over_budget_calls: acc.over,
      compression_ratio: r4(acc.raw / Math.max(1, acc.staged)),
      cached_tokens: cached,
      hit_rate: r4(cached / Math.max(1, acc.staged)),
      hit_rate_between_compactions: r4(acc.betweenCached / Math.max(1, acc.betweenStaged)),
      prefill_tokens: acc.staged - cached,
      cost_usd: Math.round(costUsd(this.pricing, acc.staged, cached, 0) * 1e6) / 1e6,
      verbatim_retention: r4(acc.verbatimSum / Math.max(1, acc.calls)),
      compactions: acc.compactions,
      constraint_retention: acc.compactions ? r4(acc.constraintSum / acc.compactions) : 1,
      stale_exposure_calls: acc.exposed,
      stale_exposure_rate: r4(acc.exposed / Math.max(1, acc.calls)),
    };
  }

  /** A superseded read still in context (not hidden) with no tombstone naming it. */
  private exposed(truth: LedgerState, view: StagedView): boolean {
    const inView = new Set(view.origin.filter((i) => i >= 0 && !view.hidden.has(i)));
    let text: string | undefined;
    for (const o of truth.observations) {
      // superseded file reads only (not TTL expiry of volatile command output)
      if (!o.stale || o.stale.reason === 'expired' || !inView.has(o.index)) continue;
      const tomb = truth.tombstones.find((t) => t.obs === o.id);
      text ??= view.messages.map(textOf).join('\n');
      if (!tomb || !text.includes(tomb.text)) return true;
    }
    return false;
  }
}

/** The raw history's verbatim items of one session, and which staged messages hold each. */
class RetainedItems {
  private readonly items: string[] = [];
  private readonly seen = new Set<string>();
  /** Per staged message (by key): how many items were tested, which indexes it holds. */
  private readonly hits = new Map<string, { tested: number; found: number[] }>();

  get size(): number {
    return this.items.length;
  }

  add(vs: readonly string[]): void {
    for (const v of vs) {
      if (this.seen.has(v)) continue;
      this.seen.add(v);
      this.items.push(v);
    }
  }

  retainedBy(messages: ChatMessage[]): number {
    const kept = new Set<number>();
    for (const m of messages) {
      const key = messageKey(m);
      let h = this.hits.get(key);
      if (!h) this.hits.set(key, (h = { tested: 0, found: [] }));
      if (h.tested < this.items.length) {
        const text = shownText(m);
        for (let i = h.tested; i < this.items.length; i++) if (occursIn(this.items[i], text)) h.found.push(i);
        h.tested = this.items.length;
      }
      for (const i of h.found) kept.add(i);
    }
    return kept.size;
  }
}
