// Quick check of the context chain on recorded mini-swe-agent trajectories (not the replay
// harness): per trajectory, passthrough vs ctxgate under the `last-n-elision` profile (tool
// outputs older than the last N replaced in place), prefilled tokens (message-level longest
// common prefix with the previous call), input cost (cached at CACHED_RATE), verbatim and
// constraint retention at every compaction, stale exposure, and the hit rate between
// compactions for the append-only profile. Verbatim retention is measured as `bench strategies`
// does (same extractor, verbatim.ts): every item of every message the agent has sent so far
// (as first sent, before it elided it) must be in the prompt ctxgate sends, at every call. Usage:
//   npx tsx middleware/compaction/replay-check.ts [dir] [budgetTokens] [N]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '../types.ts';
import { runContextChain, type LedgerBundle } from '../ledger/chain.ts';
import { staleExposure } from '../ledger/ledger.ts';
import { approxTokens, messageText, messageTokens } from '../ledger/message-text.ts';
import { constraintLines, messageVerbatim, missingFrom, shownText } from './verbatim.ts';

const CACHED_RATE = 0.1;
const dir = process.argv[2] ?? '../shared/trajectories/mini-swe-agent-deepseek';
const budget = Number(process.argv[3] ?? 8000);
const lastN = Number(process.argv[4] ?? 5);

const toks = (ms: ChatMessage[]): number => ms.reduce((n, m) => n + messageTokens(m, approxTokens), 0);
function lcpTokens(a: ChatMessage[] | undefined, b: ChatMessage[]): number {
  if (!a) return 0;
  let i = 0;
  while (i < a.length && i < b.length && JSON.stringify(a[i]) === JSON.stringify(b[i])) i++;
  return toks(b.slice(0, i));
}

function elide(req: ChatMessage[], n: number): ChatMessage[] {
  const idx = req.map((m, i) => (m.role === 'tool' ? i : -1)).filter((i) => i >= 0);
  const old = new Set(idx.slice(0, Math.max(0, idx.length - n)));
  return req.map((m, i) =>
    old.has(i) ? { ...m, content: `Old environment output: (${messageText(m).split('\n').length} lines omitted)` } : m,
  );
}

async function run(requests: ChatMessage[][]) {
  let st: LedgerBundle | undefined;
  let prev: ChatMessage[] | undefined;
  let prevPass: ChatMessage[] | undefined;
  const r = {
    prefOurs: 0,
    prefPass: 0,
    costOurs: 0,
    costPass: 0,
    compactions: 0,
    refusals: 0,
    vMiss: 0,
    vMissCalls: 0,
    vOwed: 0,
    cMiss: 0,
    stale: 0,
    hitNum: 0,
    hitNumC: 0,
    hitDen: 0,
    breaks: 0,
  };
  const everV = new Set<string>();
  let seen = 0;
  let prevReqLen = 0;
  for (const req of requests) {
    const out = await runContextChain(req, st, { ledger: { eviction: false }, compaction: { budgetTokens: budget } });
    st = out.state;
    const t = toks(out.messages);
    const cached = lcpTokens(prev, out.messages);
    const tp = toks(req);
    const cachedP = lcpTokens(prevPass, req);
    r.prefOurs += t - cached;
    r.prefPass += tp - cachedP;
    r.costOurs += t - cached + CACHED_RATE * cached;
    r.costPass += tp - cachedP + CACHED_RATE * cachedP;
    const compacted = out.receipts.some((x) => x.action.startsWith('compacted'));
    if (!compacted && prev) {
      // Engines also keep the blocks they decoded: the previous completion, which this request
      // appends right after the previous prompt.
      const completion = req[prevReqLen];
      r.hitNumC += completion?.role === 'assistant' ? lcpTokens([...prev, completion], out.messages) : cached;
      r.hitNum += cached;
      r.hitDen += t;
      if (cached < toks(prev)) r.breaks++;
    }
    r.refusals += out.receipts.filter((x) => x.action === 'refused').length;
    // Items of messages as first sent (the agent elides only older outputs).
    for (let i = seen; i < req.length; i++) for (const v of messageVerbatim(req[i])) everV.add(v);
    seen = Math.max(seen, req.length);
    const text = out.messages.map(shownText).join('\n');
    const miss = missingFrom(everV, text);
    r.vOwed += everV.size;
    r.vMiss += miss.length;
    if (miss.length) {
      r.vMissCalls++;
      if (process.env.SHOW_MISSING) console.log(`  call ${req.length}: missing ${miss.slice(0, 5).join(' ; ')}`);
    }
    if (compacted) {
      r.compactions++;
      const task = messageText(req.find((m) => m.role === 'user')!);
      r.cMiss += missingFrom(constraintLines(task), text).length;
    }
    r.stale += st.observations
      ? staleExposure(st.observations, out.messages, st.compaction?.checkpointMessage ? st.compaction.watermark : 0)
      : 0;
    prev = out.messages;
    prevPass = req;
    prevReqLen = req.length;
  }
  return r;
}

const files = readdirSync(dir).filter((f) => f.endsWith('.traj.json') && f.includes('_dev_'));
const tot = {
  prefOurs: 0,
  prefPass: 0,
  costOurs: 0,
  costPass: 0,
  compactions: 0,
  vMiss: 0,
  vMissCalls: 0,
  vOwed: 0,
  cMiss: 0,
  stale: 0,
  appendHitNum: 0,
  appendHitNumC: 0,
  appendHitDen: 0,
  refusals: 0,
  appendBreaks: 0,
};
for (const f of files) {
  const d = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { messages: (ChatMessage & { extra?: unknown })[] };
  const msgs = d.messages.filter((m) => m.role !== 'exit').map(({ extra: _e, ...m }) => m as ChatMessage);
  const reqs: ChatMessage[][] = [];
  msgs.forEach((m, i) => {
    if (m.role === 'assistant') reqs.push(msgs.slice(0, i));
  });
  const a = await run(reqs.map((r) => elide(r, lastN)));
  const b = await run(reqs);
  for (const k of [
    'prefOurs',
    'prefPass',
    'costOurs',
    'costPass',
    'compactions',
    'vMiss',
    'vMissCalls',
    'vOwed',
    'cMiss',
    'stale',
    'refusals',
  ] as const)
    tot[k] += a[k];
  tot.appendHitNum += b.hitNum;
  tot.appendHitNumC += b.hitNumC;
  tot.appendHitDen += b.hitDen;
  tot.appendBreaks += b.breaks;
  console.log(
    `${f.slice(0, 60).padEnd(60)} calls ${String(reqs.length).padStart(3)} prefill ×${(a.prefPass / a.prefOurs).toFixed(2)} cost ×${(a.costPass / a.costOurs).toFixed(2)} compactions ${a.compactions} refused ${a.refusals} vMiss ${a.vMiss} (calls ${a.vMissCalls}) cMiss ${a.cMiss} stale ${a.stale} append-hit ${(b.hitNum / Math.max(1, b.hitDen)).toFixed(3)}`,
  );
}
console.log(
  `TOTAL prefill ×${(tot.prefPass / tot.prefOurs).toFixed(2)} cost ×${(tot.costPass / tot.costOurs).toFixed(2)} compactions ${tot.compactions} refused ${tot.refusals} verbatim retention ${(100 * (1 - tot.vMiss / Math.max(1, tot.vOwed))).toFixed(2)}% (item-calls missing ${tot.vMiss}, calls with a miss ${tot.vMissCalls}) constraint-missing ${tot.cMiss} stale ${tot.stale} append-only hit between compactions ${(tot.appendHitNum / tot.appendHitDen).toFixed(3)} (${(tot.appendHitNumC / tot.appendHitDen).toFixed(3)} with the previous completion cached; prefix breaks between compactions: ${tot.appendBreaks})`,
);
