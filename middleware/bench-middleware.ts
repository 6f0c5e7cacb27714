// `ctxgate bench middleware` (npm run bench:middleware): CPU per call of the ctxgate pipeline on a
// 32k-token, 100-message agent session where each call appends one step, p50/p95 over many
// calls, printed beside a whole-prompt render + tokenisation of the same requests in the same run.
// Target: ≤ 2 ms p50 per call (hashes carried from the previous call, ids reused up to the last
// shared cut, windowed incremental rendering, incremental block hashes).
import { parseArgs } from 'node:util';
import { createPipeline } from './pipeline.ts';
import { loadTokenizer } from './tokens/registry.ts';
import type { ChatMessage, ChatRequest, ToolDef } from './types.ts';

export const help = `usage: ctxgate bench middleware [--tokenizer qwen3] [--calls 300] [--tokens 32000] [--messages 100] [--layout ctxgate|passthrough]

Builds a synthetic agent session (system prompt with a clock line, tools, tool calls and tool
outputs) of about --tokens tokens in --messages messages, then times --calls pipeline calls that
each append one agent step (reply + new observation). Prints p50/p95 per call and the cost of whole-prompt render+tokenise.`;

const DEFAULTS = { calls: 300, tokens: 32_000, messages: 100 };
const WORDS =
  'the build failed because module path src utils parser returned an unexpected token at line column while running pytest with coverage enabled'.split(
    ' ',
  );

/** An integer option >= 1; a bad one is a usage error (exit 2). */
function count(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be an integer >= 1, got '${v}'`);
  return n;
}

function text(seed: number, words: number): string {
  const out: string[] = [];
  let x = seed * 2654435761;
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(WORDS[x % WORDS.length] + (x % 17 === 0 ? ` ${x % 997}\n` : ''));
  }
  return out.join(' ');
}

const tools: ToolDef[] = ['bash', 'read_file', 'write_file', 'search'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: `${name} tool`,
    parameters: {
      type: 'object',
      properties: { arg: { type: 'string' }, timeout: { type: 'integer' } },
      required: ['arg'],
    },
  },
}));

export function buildSession(tokens: number, messages: number): ChatMessage[] {
  // ~1.3 tokens per word for this vocabulary; split the budget over the history.
  const perMessage = Math.max(8, Math.round(tokens / 1.3 / messages));
  const out: ChatMessage[] = [
    { role: 'system', content: `Current date: 2026-11-30T03:10:00Z\nYou are a coding agent.\n${text(1, 200)}` },
    { role: 'user', content: text(2, perMessage) },
  ];
  for (let i = 0; out.length < messages; i++) {
    out.push({
      role: 'assistant',
      content: text(3 + i, 20),
      tool_calls: [
        {
          id: `call_${i}`,
          type: 'function',
          function: { name: 'bash', arguments: JSON.stringify({ arg: `ls ${i}`, timeout: 30 }) },
        },
      ],
    });
    out.push({ role: 'tool', tool_call_id: `call_${i}`, content: text(1000 + i, perMessage * 2) });
  }
  return out.slice(0, messages);
}

function pct(xs: number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export async function run(argv: string[]): Promise<number> {
  // strict: an unknown option is refused (the bench dispatcher prints it), never ignored
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      tokenizer: { type: 'string' },
      calls: { type: 'string' },
      tokens: { type: 'string' },
      messages: { type: 'string' },
      layout: { type: 'string' },
    },
  });
  const tokenizer = v.tokenizer ?? 'qwen3';
  const layout = v.layout ?? 'ctxgate';
  let calls: number;
  let base: ChatMessage[];
  try {
    if (layout !== 'ctxgate' && layout !== 'passthrough')
      throw new Error(`--layout must be ctxgate or passthrough, got '${layout}'`);
    calls = count(v.calls, 'calls', DEFAULTS.calls);
    base = buildSession(count(v.tokens, 'tokens', DEFAULTS.tokens), count(v.messages, 'messages', DEFAULTS.messages));
  } catch (err) {
    process.stderr.write(`ctxgate bench middleware: ${(err as Error).message}\n`);
    return 2;
  }
  const tok = await loadTokenizer(tokenizer);
  const pipeline = createPipeline({ model: 'bench', tokenizer, layout });
  const ctx = { tenant: 'bench', requestId: 'r', headers: { 'x-session-id': 'bench' }, model: 'bench' };
  const history = base.slice();
  const requests: ChatRequest[] = [];
  for (let i = 0; i < calls + 20; i++) {
    // One agent step per call: its reply and the new observation (calls end on a user turn).
    history.push({ role: 'assistant', content: `ok ${i}` }, { role: 'user', content: `continue ${i}` });
    requests.push({ model: 'bench', messages: structuredClone(history), tools: structuredClone(tools) });
  }
  // Warm-up: JIT, tokenizer caches, the session's first (full) render.
  for (let i = 0; i < 20; i++) await pipeline.process(requests[i], ctx);
  const per: number[] = [];
  const whole: number[] = [];
  let cached = 0;
  let prompt = 0;
  for (let i = 20; i < requests.length; i++) {
    const t0 = process.hrtime.bigint();
    const r = await pipeline.process(requests[i], ctx);
    per.push(Number(process.hrtime.bigint() - t0) / 1e6);
    prompt = r.prefix?.prompt_tokens ?? 0;
    cached = r.prefix?.predicted_cached_tokens ?? 0;
    if (i % 10 === 0) {
      const t1 = process.hrtime.bigint();
      tok.encode(tok.renderChat(r.body.messages, { tools: r.body.tools }));
      whole.push(Number(process.hrtime.bigint() - t1) / 1e6);
    }
  }
  const f = (x: number) => x.toFixed(3);
  process.stdout.write(
    `bench middleware: tokenizer ${tokenizer}, layout ${layout}, ${base.length} messages, ~${prompt} prompt tokens, ${per.length} calls\n`,
  );
  process.stdout.write(
    `  pipeline per call         p50 ${f(pct(per, 50))} ms   p95 ${f(pct(per, 95))} ms   (target p50 <= 2 ms)\n`,
  );
  process.stdout.write(
    `  whole render+tokenise     p50 ${f(pct(whole, 50))} ms   p95 ${f(pct(whole, 95))} ms   (${whole.length} samples)\n`,
  );
  process.stdout.write(`  ratio whole/pipeline p50  ${(pct(whole, 50) / pct(per, 50)).toFixed(1)}x\n`);
  process.stdout.write(`  last call: ${cached}/${prompt} tokens predicted cached\n`);
  return 0;
}
