// `ctxgate bench tokens`: CPU per tool output of the fast byte-level BPE encode
// (middleware/tokens/fast-bpe.ts) with its pre-tokenizer split read by character codes on ASCII
// text (ascii-split.ts) and added tokens found by indexOf ("new"), and without either, the
// compiled regex at every piece and a table lookup at every character ("base"), on one
// library tokenizer in one process, memos warm (as in a gateway that has served a while). Rounds
// alternate base, new, new, base, …; each encodes every text once and is timed by the process's
// CPU (user + system), so a preempted round on a loaded host does not count the wait. Prints the
// median µs per text of each and the median of the paired round ratios new / base. Every text's
// ids are first checked equal across base, new and the library's own encode (a difference fails
// the run). Texts: the growing-session tool outputs of `bench overhead` (~1.7k characters of
// numbered Python, ~550 tokens), or with --trajectories every distinct tool or user message text
// of recorded runs. O(rounds × characters).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { compactBpeModel } from '../middleware/tokens/compact-bpe-model.ts';
import { fastBpeEncoder } from '../middleware/tokens/fast-bpe.ts';
import { bundledLibraryTokenizer } from '../middleware/tokens/library-tokenizer.ts';
import type { ChatMessage } from '../middleware/types.ts';
import { readSessions } from './formats/read-sessions.ts';
import { GrowingTraffic } from './overhead/growing-sessions.ts';

export const help = `usage: ctxgate bench tokens [--tokenizer qwen3,llama3_1] [--texts 300] [--rounds 12] [--trajectories PATH]

Times the fast encode of tool outputs with the ASCII piece scan (new) and with the regex split
only (base), alternating rounds in one process, memos warm; checks both give the library's ids.
--trajectories PATH takes every distinct tool/user message text of the recorded runs there
instead of the synthetic growing-session tool outputs (--texts caps their number).`;

const DEFAULTS = { tokenizers: 'qwen3,llama3_1', texts: 300, rounds: 12 };

function count(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be an integer >= 1, got '${v}'`);
  return n;
}

/** `n` distinct tool outputs of bench overhead's growing sessions. */
export function growingToolOutputs(n: number): string[] {
  const traffic = new GrowingTraffic({ slots: 4, model: 'm' });
  const seen = new Set<string>();
  while (seen.size < n) {
    const body = JSON.parse(traffic.next()) as { messages: ChatMessage[] };
    const last = body.messages[body.messages.length - 1];
    if (last.role === 'tool' && typeof last.content === 'string') seen.add(last.content);
  }
  return [...seen];
}

async function recordedTexts(path: string, n: number): Promise<string[]> {
  const seen = new Set<string>();
  for (const s of await readSessions([path]))
    for (const c of s.calls)
      for (const m of c.body.messages)
        if ((m.role === 'tool' || m.role === 'user') && typeof m.content === 'string' && m.content.length > 0)
          if (seen.size < n) seen.add(m.content);
  return [...seen];
}

const median = (xs: number[]): number => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Passes over the texts in one round: a round of ~10 ms would be a few scheduler ticks. */
const PASSES = 10;

/** CPU µs (user + system) per pass to encode every text, over PASSES passes. */
function timeRound(encode: (t: string) => number[], texts: string[]): number {
  const c0 = process.cpuUsage();
  for (let p = 0; p < PASSES; p++) for (const t of texts) encode(t);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / PASSES;
}

const sameIds = (a: number[], b: number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

export async function run(argv: string[]): Promise<number> {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      tokenizer: { type: 'string' },
      texts: { type: 'string' },
      rounds: { type: 'string' },
      trajectories: { type: 'string' },
    },
  });
  let n: number;
  let rounds: number;
  try {
    n = count(v.texts, 'texts', DEFAULTS.texts);
    rounds = count(v.rounds, 'rounds', DEFAULTS.rounds);
  } catch (err) {
    process.stderr.write(`ctxgate bench tokens: ${(err as Error).message}\n`);
    return 2;
  }
  const texts = v.trajectories ? await recordedTexts(v.trajectories, n) : growingToolOutputs(n);
  const chars = texts.reduce((a, t) => a + t.length, 0);
  process.stdout.write(
    `bench tokens: ${texts.length} texts, ${(chars / texts.length).toFixed(0)} characters each on average, ${rounds} rounds, load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}\n`,
  );
  let failed = false;
  for (const spec of (v.tokenizer ?? DEFAULTS.tokenizers).split(',')) {
    const lib = bundledLibraryTokenizer(spec);
    const base = fastBpeEncoder(lib.tok, undefined, { asciiScan: false, addedIndexOf: false });
    const next = fastBpeEncoder(lib.tok);
    if (!base || !next) {
      process.stdout.write(`  ${spec}: the fast encode does not apply to this tokenizer\n`);
      continue;
    }
    // As the handle does, after the fast encoders have read the library's structures.
    compactBpeModel((lib.tok as { model?: unknown }).model);
    let tokens = 0;
    let differ = 0;
    for (const t of texts) {
      const want = lib.encode(t);
      tokens += want.length;
      if (!sameIds(base(t), want) || !sameIds(next(t), want)) differ++;
    }
    if (differ > 0) {
      failed = true;
      process.stdout.write(`  ${spec}: ${differ} of ${texts.length} texts differ from the library's ids\n`);
      continue;
    }
    const tb: number[] = [];
    const tn: number[] = [];
    const ratios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // base, new, new, base, …: a drift in the host's load falls on both alike
      if (r % 2 === 0) {
        tb.push(timeRound(base, texts));
        tn.push(timeRound(next, texts));
      } else {
        tn.push(timeRound(next, texts));
        tb.push(timeRound(base, texts));
      }
      ratios.push(tn[r] / tb[r]);
    }
    const perText = (xs: number[]) => (median(xs) / texts.length).toFixed(1).padStart(7);
    process.stdout.write(
      `  ${spec.padEnd(9)} ${(tokens / texts.length).toFixed(0)} tokens a text, ids equal (base, new, library)\n` +
        `    base (regex, char table)   ${perText(tb)} µs CPU per text (median of ${rounds} rounds)\n` +
        `    new (ASCII scan, indexOf)  ${perText(tn)} µs CPU per text\n` +
        `    new / base                 ${median(ratios).toFixed(2)}x (median of paired rounds; min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)})\n`,
    );
  }
  return failed ? 1 : 0;
}
