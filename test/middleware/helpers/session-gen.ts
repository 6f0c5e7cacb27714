// Generates mini-swe-agent-shaped sessions (one `bash` tool, <returncode>/<output> results)
// with reads and later writes of the same files, for ledger/stabilise/compaction tests.
import { mulberry32 } from '../../../loadtest/profiles/rng.ts';
import type { ChatMessage } from '../../../middleware/types.ts';

export interface Step {
  cmd: string;
  out: string;
  exit?: number;
  thought?: string;
}

export function toolResult(out: string, exit = 0): string {
  return `<returncode>${exit}</returncode>\n<output>\n${out}\n</output>`;
}

export function buildSession(task: string, steps: Step[]): ChatMessage[] {
  const msgs: ChatMessage[] = [
    {
      role: 'system',
      content: 'You are a helpful assistant that can interact with a computer shell to solve programming tasks.',
    },
    { role: 'user', content: task },
  ];
  steps.forEach((s, k) => {
    const id = `call_${k + 1}`;
    msgs.push({
      role: 'assistant',
      content: s.thought ?? `Step ${k + 1}.`,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: s.cmd }) } }],
    });
    msgs.push({ role: 'tool', tool_call_id: id, content: toolResult(s.out, s.exit ?? 0) });
  });
  return msgs;
}

/** Requests the agent sends: before each assistant message, the history so far. */
/** A short fix-it session: a file read, a grep, an edit with no output, a test run, an echo. */
export function fixItSession(): ChatMessage[] {
  return buildSession('Fix it. Do not modify tests.', [
    { cmd: 'cat src/app.py', out: codeLines('app', 30) },
    { cmd: 'grep -n foo src/util.py', out: '3:foo = 1' },
    { cmd: "sed -i 's/x/y/' src/app.py", out: '' },
    { cmd: 'python -m pytest -q', out: '1 passed' },
    { cmd: 'echo more', out: 'more' },
  ]);
}

export function requestsOf(msgs: ChatMessage[]): ChatMessage[][] {
  const out: ChatMessage[][] = [];
  for (let i = 2; i <= msgs.length; i++)
    if (i === msgs.length || msgs[i].role === 'assistant') out.push(msgs.slice(0, i));
  return out;
}

/** Deterministic pseudo-random generator: the project's mulberry32. */
export const rng = mulberry32;

export function codeLines(name: string, n: number, start = 1): string {
  return Array.from({ length: n }, (_, k) => `${start + k}\tdef ${name}_${k}(x):  # line ${start + k} of ${name}`).join(
    '\n',
  );
}

/** A session with random reads, writes (sed -i, heredoc, python script) and test runs. */
export function randomSession(seed: number, calls: number): ChatMessage[] {
  const r = rng(seed);
  const files = ['src/app.py', 'src/util.py', 'src/models/user.py', 'tests/test_app.py'];
  const steps: Step[] = [];
  for (let k = 0; k < calls; k++) {
    const f = files[Math.floor(r() * files.length)];
    const p = r();
    if (p < 0.45) steps.push({ cmd: `sed -n '1,40p' ${f}`, out: codeLines(f.replace(/\W/g, '_'), 40) });
    else if (p < 0.6) steps.push({ cmd: `grep -n "def " ${f}`, out: `12:def a():\n30:def b():` });
    else if (p < 0.75) steps.push({ cmd: `sed -i 's/a/b/' ${f}`, out: '' });
    else if (p < 0.85) steps.push({ cmd: `cat > ${f} << 'EOF'\nprint(${k})\nEOF`, out: '' });
    else
      steps.push({
        cmd: 'python -m pytest tests -x 2>&1 | tail -20',
        out: `tests/test_app.py:42: AssertionError\nFAILED tests/test_app.py::test_x - assert 1 == 2`,
        exit: 1,
      });
  }
  return buildSession('Fix the bug in src/app.py. Do not modify tests.', steps);
}

/** SWE-agent LastNObservations: tool outputs older than the last n replaced in place. */
export function elideLastN(req: ChatMessage[], n: number): ChatMessage[] {
  const toolIdx = req.map((m, i) => (m.role === 'tool' ? i : -1)).filter((i) => i >= 0);
  const old = new Set(toolIdx.slice(0, Math.max(0, toolIdx.length - n)));
  return req.map((m, i) =>
    old.has(i)
      ? { ...m, content: `Old environment output: (${String(m.content).split('\n').length} lines omitted)` }
      : m,
  );
}
