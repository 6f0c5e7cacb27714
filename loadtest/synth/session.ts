// One synthetic agent session: a small Python repository, a task with constraints, and an
// agent loop that explores, reproduces, edits, re-reads (superseding earlier reads), type-checks
// and re-runs tests. Call k sends everything before it (append-only). O(calls²) message refs.
import type { ChatMessage, ChatRequest } from '../../middleware/types.ts';
import type { Session } from '../formats/types.ts';
import { intBetween, mulberry32, pick, shuffle, type Rng } from '../profiles/rng.ts';
import {
  diffOutput,
  grepOutput,
  listing,
  makeFile,
  mypyLog,
  readOutput,
  testLog,
  type Failure,
  type RepoFile,
} from './content.ts';
import { CONSTRAINTS, SYSTEM_PROMPT, TOOLS, taskMessage } from './prompts.ts';

export interface SessionShape {
  minCalls: number;
  maxCalls: number;
  /** Functions per source file (file size driver). */
  minFunctions: number;
  maxFunctions: number;
  model: string;
}

const PACKAGES = ['authkit', 'ledgerly', 'routemap', 'cachewarden', 'schemaform', 'tokenbox'];
const MODULES = ['core', 'tokens', 'session', 'cache', 'io', 'config', 'utils', 'models'];

interface Step {
  thought: string;
  tool: string;
  args: Record<string, unknown>;
  output: string;
}

class Repo {
  files: RepoFile[];
  tests: string[];
  constructor(
    readonly pkg: string,
    rng: Rng,
    shape: SessionShape,
  ) {
    const mods = shuffle(MODULES, rng).slice(0, intBetween(4, 6, rng));
    this.files = mods.map((m) =>
      makeFile(`src/${pkg}/${m}.py`, rng, intBetween(shape.minFunctions, shape.maxFunctions, rng)),
    );
    this.tests = mods.map((m) => `tests/test_${m}.py`);
  }
}

export function generateSession(index: number, seed: number, shape: SessionShape): Session {
  const rng = mulberry32((seed * 1_000_003 + index * 7919) >>> 0);
  const pkg = pick(PACKAGES, rng);
  const repo = new Repo(pkg, rng, shape);
  const target = repo.files[0];
  const fn = pick(target.functions, rng);
  const testFile = repo.tests[0];
  const failingTest = `${testFile}::test_${fn.name}_handles_none`;
  const failure: Failure = {
    test: failingTest,
    file: testFile,
    line: intBetween(20, 140, rng),
    assertion: `assert ${fn.name}(None, strict=True) == ${intBetween(0, 99, rng)}`,
  };
  const constraints = shuffle(CONSTRAINTS, rng).slice(0, 3);
  const issue = `Issue #${intBetween(100, 9999, rng)}: \`${fn.name}()\` in \`${target.path}\` raises \`ValueError\` instead of returning the default when called with None and strict=True (regression since v${intBetween(1, 4, rng)}.${intBetween(0, 20, rng)}).`;
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: taskMessage(`github.com/example/${pkg}`, issue, failingTest, constraints) },
  ];
  const nCalls = intBetween(shape.minCalls, shape.maxCalls, rng);
  let fixed = false;

  const edit = (f: RepoFile): Step => {
    const fnE = pick(f.functions, rng);
    const at = fnE.line + 2;
    const before = f.lines.slice(at - 1, at);
    const arg = /\((\w+):/.exec(f.lines[fnE.line - 1])?.[1] ?? 'value';
    const after = [`    if ${arg} is None and strict:`, `        return ${intBetween(0, 99, rng)}`, ...before];
    const out = diffOutput(f, at, before, after);
    f.lines.splice(at - 1, 1, ...after);
    for (const g of f.functions) if (g.line > at) g.line += after.length - before.length;
    return {
      thought: `I'll handle the None case early in \`${fnE.name}\`.`,
      tool: 'edit_file',
      args: { path: f.path, old: before.join('\n'), new: after.join('\n') },
      output: out,
    };
  };
  const runTests = (all: boolean): Step => {
    const fails = fixed || rng() < 0.3 ? [] : [failure];
    const total = all ? intBetween(180, 420, rng) : intBetween(8, 30, rng);
    return {
      thought: all ? 'Run the full suite to check nothing else broke.' : `Run \`${failingTest}\`.`,
      tool: 'run_tests',
      args: { targets: all ? [] : [failingTest] },
      output: `exit_code: ${fails.length ? 1 : 0}\n${testLog(rng, total, fails, 0.5 + rng() * 30)}`,
    };
  };
  const scripted: (() => Step)[] = [
    () => ({
      thought: 'Let me look at the repository layout first.',
      tool: 'bash',
      args: { command: 'find . -name "*.py" -not -path "./.venv/*" | sort' },
      output: `exit_code: 0\n${listing(repo.files, repo.tests)}`,
    }),
    () => ({
      thought: `Search for \`${fn.name}\`.`,
      tool: 'grep',
      args: { pattern: fn.name },
      output: grepOutput(rng, repo.files, fn.name),
    }),
    () => ({
      thought: `Read \`${target.path}\`.`,
      tool: 'read_file',
      args: { path: target.path },
      output: readOutput(target),
    }),
    () => runTests(false),
    () => edit(target),
    () => runTests(false),
    () => ({
      thought: 'Type-check the package.',
      tool: 'bash',
      args: { command: `mypy src/${pkg}` },
      output: `exit_code: 1\n${mypyLog(rng, repo.files, intBetween(1, 6, rng))}`,
    }),
    () => ({
      thought: `Re-read \`${target.path}\` after the edit.`,
      tool: 'read_file',
      args: { path: target.path },
      output: readOutput(target),
    }),
  ];
  const random = (): Step => {
    const r = rng();
    const f = pick(repo.files, rng);
    if (r < 0.3) {
      const from = intBetween(1, Math.max(1, f.lines.length - 40), rng);
      return {
        thought: `Look at \`${f.path}\` around line ${from}.`,
        tool: 'read_file',
        args: { path: f.path, start: from, end: from + 60 },
        output: readOutput(f, from, from + 60),
      };
    }
    if (r < 0.45) {
      const w = pick(f.functions, rng).name;
      return {
        thought: `Where else is \`${w}\` used?`,
        tool: 'grep',
        args: { pattern: w },
        output: grepOutput(rng, repo.files, w),
      };
    }
    if (r < 0.6) return edit(f);
    if (r < 0.8) return runTests(rng() < 0.3);
    if (r < 0.9)
      return {
        thought: 'Type-check again.',
        tool: 'bash',
        args: { command: `mypy src/${pkg}` },
        output: `exit_code: ${fixed ? 0 : 1}\n${mypyLog(rng, repo.files, fixed ? 0 : intBetween(1, 4, rng))}`,
      };
    return {
      thought: 'Check the working tree.',
      tool: 'bash',
      args: { command: 'git status --short && git diff --stat' },
      output: `exit_code: 0\n${repo.files
        .slice(0, 2)
        .map((x) => ` M ${x.path}`)
        .join(
          '\n',
        )}\n 2 files changed, ${intBetween(3, 40, rng)} insertions(+), ${intBetween(0, 12, rng)} deletions(-)`,
    };
  };

  const calls: { body: ChatRequest }[] = [];
  for (let k = 0; k < nCalls; k++) {
    calls.push({ body: { model: shape.model, messages: messages.slice(), tools: TOOLS, temperature: 0 } });
    if (k === nCalls - 1) break;
    if (k > nCalls * 0.7) fixed = true;
    const step = k === nCalls - 2 ? runTests(true) : k < scripted.length ? scripted[k]() : random();
    const id = `call_${index}_${k}_${Math.floor(rng() * 1e9).toString(36)}`;
    messages.push({
      role: 'assistant',
      content: step.thought,
      tool_calls: [{ id, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.args) } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: step.output });
  }
  return { id: `synth-${seed}-${String(index).padStart(2, '0')}-${pkg}`, source: `synth:${seed}`, calls };
}
