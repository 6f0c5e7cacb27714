// `ctxgate explain FILE…`: per-call prefix-cache table for recorded sessions (any format the replay
// harness reads: request-stream .jsonl, mini-swe-agent .traj.json, SWE-agent .traj, aider). Each
// call is run through the pipeline and the diagnostics printed: predicted cached tokens and, when
// the prefix broke, the cause and where.
import { parseArgs } from 'node:util';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { createPipeline } from '../../middleware/pipeline.ts';
import { loadTokenizer } from '../../middleware/tokens/registry.ts';
import type { PrefixDiagnostics } from '../../middleware/types.ts';

export const help = `usage: ctxgate explain FILE|DIR… [--tokenizer qwen3] [--layout passthrough|ctxgate] [--block-size 16] [--chat-template FILE]

Replays each recorded session through the context pipeline (no upstream) and prints, per call:
messages, prompt tokens, predicted cached tokens (longest common token prefix with the previous
call, whole blocks) and the break cause@token index (message index): new_session, system_changed,
tools_changed, history_edited, template_rerender, truncated. Default layout: passthrough (the
session as the agent sent it); --layout ctxgate shows what ctxgate's rewrite would give.`;

export function formatBreak(p: PrefixDiagnostics | undefined): string {
  if (!p) return 'unrendered';
  if (p.break_cause === 'none') return '-';
  const at = p.break_token_index !== undefined ? `@${p.break_token_index}` : '';
  const msg = p.break_message_index !== undefined ? ` (msg ${p.break_message_index})` : '';
  return `${p.break_cause}${at}${msg}`;
}

const LAYOUTS = ['passthrough', 'ctxgate'] as const;

/** A message for the user, not a crash: the input they gave is wrong. */
function fail(message: string): number {
  process.stderr.write(`ctxgate explain: ${message}\n`);
  return 2;
}

export async function run(argv: string[]): Promise<number> {
  // strict: an unknown option is refused (cli/main.ts prints it), never taken for a file or ignored
  const { values: v, positionals: files } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      tokenizer: { type: 'string' },
      layout: { type: 'string' },
      'block-size': { type: 'string' },
      'chat-template': { type: 'string' },
    },
  });
  if (files.length === 0) {
    process.stderr.write(`ctxgate explain: give at least one FILE or DIR\n\n${help}\n`);
    return 2;
  }
  const layout = v.layout ?? 'passthrough';
  if (!(LAYOUTS as readonly string[]).includes(layout))
    return fail(`--layout must be one of ${LAYOUTS.join(', ')}, got '${layout}'`);
  const blockSize = Number(v['block-size'] ?? 16);
  if (!Number.isInteger(blockSize) || blockSize < 1)
    return fail(`--block-size must be an integer >= 1, got '${v['block-size']}'`);
  const options = {
    model: 'explain',
    tokenizer: v.tokenizer ?? 'qwen3',
    chatTemplateFile: v['chat-template'],
    layout: layout as (typeof LAYOUTS)[number],
    blockSize,
  };
  let sessions: Awaited<ReturnType<typeof readSessions>>;
  try {
    sessions = await readSessions(files);
    // loaded once per tokenizer and template: the pipelines below reuse it
    await loadTokenizer(options.tokenizer, { chatTemplateFile: options.chatTemplateFile });
  } catch (err) {
    // the input named is wrong: a missing file, one of no known format, an unknown tokenizer or template
    return fail((err as Error).message);
  }
  for (const s of sessions) await explainSession(s, createPipeline(options), options.layout);
  return 0;
}

async function explainSession(
  s: Awaited<ReturnType<typeof readSessions>>[number],
  pipeline: ReturnType<typeof createPipeline>,
  layout: string,
): Promise<void> {
  const rows: string[][] = [['call', 'messages', 'prompt tokens', 'predicted cached', 'break cause@index']];
  let prompt = 0;
  let cached = 0;
  for (let i = 0; i < s.calls.length; i++) {
    const r = await pipeline.process(s.calls[i].body, {
      tenant: 'explain',
      requestId: `${s.id}#${i}`,
      headers: { 'x-session-id': s.id },
      model: 'explain',
    });
    prompt += r.prefix?.prompt_tokens ?? 0;
    cached += r.prefix?.predicted_cached_tokens ?? 0;
    rows.push([
      String(i + 1),
      String(r.body.messages.length),
      String(r.prefix?.prompt_tokens ?? '?'),
      String(r.prefix?.predicted_cached_tokens ?? '?'),
      formatBreak(r.prefix),
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  process.stdout.write(`session ${s.id} (${s.source}), layout ${layout}\n`);
  for (const row of rows)
    process.stdout.write(row.map((v, c) => (c === 4 ? v : v.padStart(widths[c]))).join('  ') + '\n');
  process.stdout.write(
    `total: ${prompt} prompt tokens, ${cached} predicted cached (${prompt ? ((100 * cached) / prompt).toFixed(1) : '0.0'}%)\n\n`,
  );
}
