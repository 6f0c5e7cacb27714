// Deterministic tool outputs of a synthetic repository: numbered file reads, pytest logs with
// ANSI colours and progress bars, mypy diagnostics with error codes, unified diffs, grep hits,
// directory listings. Everything is driven by the caller's seeded Rng.
import { intBetween, pick, type Rng } from '../profiles/rng.ts';

const NOUNS = [
  'token',
  'session',
  'claim',
  'cache',
  'request',
  'user',
  'config',
  'record',
  'payload',
  'header',
  'schema',
  'window',
  'budget',
  'ledger',
  'route',
];
const VERBS = [
  'validate',
  'parse',
  'load',
  'build',
  'resolve',
  'normalize',
  'refresh',
  'encode',
  'decode',
  'merge',
  'flush',
  'compute',
];
const TYPES = ['str', 'int', 'dict[str, Any]', 'list[str]', 'bytes', 'float', 'Optional[int]', 'bool'];

export const ESC = '\u001b';
const c = (code: string, s: string) => `${ESC}[${code}m${s}${ESC}[0m`;

export interface RepoFile {
  path: string;
  lines: string[];
  functions: { name: string; line: number }[];
}

export function identifier(rng: Rng): string {
  return `${pick(VERBS, rng)}_${pick(NOUNS, rng)}`;
}

export function makeFile(path: string, rng: Rng, nFunctions: number): RepoFile {
  const lines = [
    `"""${path.replace(/\//g, '.').replace(/\.py$/, '')}: ${pick(NOUNS, rng)} handling."""`,
    'from __future__ import annotations',
    '',
    'import logging',
    'from typing import Any, Optional',
    '',
    'log = logging.getLogger(__name__)',
    '',
  ];
  const functions: RepoFile['functions'] = [];
  const used = new Set<string>();
  for (let f = 0; f < nFunctions; f++) {
    let name = identifier(rng);
    while (used.has(name)) name = `${name}_${f}`;
    used.add(name);
    const arg = pick(NOUNS, rng);
    const ret = pick(TYPES, rng);
    functions.push({ name, line: lines.length + 1 });
    lines.push(
      '',
      `def ${name}(${arg}: ${pick(TYPES, rng)}, *, strict: bool = False) -> ${ret}:`,
      `    """${name.replace('_', ' ')} for the given ${arg}."""`,
    );
    const body = intBetween(4, 12, rng);
    for (let b = 0; b < body; b++) {
      const v = pick(NOUNS, rng);
      const r = rng();
      if (r < 0.3) lines.push(`    if ${arg} is None:`, `        raise ValueError("${arg} must not be None")`);
      else if (r < 0.55) lines.push(`    ${v}_count = len(${arg}) + ${intBetween(0, 9, rng)}`);
      else if (r < 0.75) lines.push(`    log.debug("${name}: %s", ${arg})`);
      else lines.push(`    ${v} = ${identifier(rng)}(${arg}, strict=strict)`);
    }
    lines.push(`    return ${arg}  # type: ignore[return-value]`);
  }
  return { path, lines, functions };
}

export function readOutput(f: RepoFile, from = 1, to = f.lines.length): string {
  const out: string[] = [];
  for (let i = from; i <= Math.min(to, f.lines.length); i++) out.push(`${String(i).padStart(4)}  ${f.lines[i - 1]}`);
  return out.join('\n');
}

function progressBar(pct: number): string {
  const w = 30;
  const fill = Math.round((pct / 100) * w);
  return `[${'#'.repeat(fill)}${'-'.repeat(w - fill)}] ${String(pct).padStart(3)}%`;
}

export interface Failure {
  test: string;
  file: string;
  line: number;
  assertion: string;
}

export function testLog(rng: Rng, total: number, failures: Failure[], seconds: number): string {
  const out = [
    c('1', `============================= test session starts ==============================`),
    'platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0',
    `collected ${total} items`,
    '',
  ];
  for (let p = 10; p <= 100; p += 10)
    out.push(
      `\r${progressBar(p)} ${c('32', '.'.repeat(intBetween(3, 9, rng)))}${p === 50 && failures.length ? c('31', 'F') : ''}`,
    );
  out.push('');
  if (failures.length) {
    out.push(c('31;1', '=================================== FAILURES ==================================='));
    for (const f of failures) {
      out.push(
        c('31;1', `_____________________________ ${f.test} _____________________________`),
        '',
        `    def ${f.test.split('::').pop()}():`,
        `>       ${f.assertion}`,
        c('31', `E       AssertionError: ${f.assertion.replace(/^assert /, 'assert ')}`),
        '',
        c('31', `${f.file}:${f.line}: AssertionError`),
      );
    }
    out.push(c('36', '=========================== short test summary info ============================'));
    for (const f of failures) out.push(`FAILED ${f.test} - AssertionError: ${f.assertion}`);
  }
  const passed = total - failures.length;
  const summary = failures.length
    ? c('31', `${failures.length} failed, ${passed} passed in ${seconds.toFixed(2)}s`)
    : c('32', `${passed} passed in ${seconds.toFixed(2)}s`);
  out.push(`========================= ${summary} =========================`);
  return out.join('\n');
}

export function mypyLog(rng: Rng, files: RepoFile[], errors: number): string {
  const codes = ['arg-type', 'return-value', 'union-attr', 'attr-defined', 'assignment', 'call-arg'];
  const out: string[] = [];
  for (let i = 0; i < errors; i++) {
    const f = pick(files, rng);
    const fn = pick(f.functions, rng);
    out.push(
      `${f.path}:${fn.line + intBetween(1, 5, rng)}: ${c('31', 'error:')} Argument 1 to "${fn.name}" has incompatible type "${pick(TYPES, rng)}"; expected "${pick(TYPES, rng)}"  ${c('33', `[${pick(codes, rng)}]`)}`,
    );
  }
  out.push(
    errors
      ? c(
          '31;1',
          `Found ${errors} error${errors > 1 ? 's' : ''} in ${Math.min(errors, files.length)} file(s) (checked ${files.length + 14} source files)`,
        )
      : c('32;1', `Success: no issues found in ${files.length + 14} source files`),
  );
  return out.join('\n');
}

export function diffOutput(f: RepoFile, at: number, before: string[], after: string[]): string {
  const ctx = 3;
  const start = Math.max(1, at - ctx);
  const pre = f.lines.slice(start - 1, at - 1);
  const post = f.lines.slice(at - 1 + before.length, at - 1 + before.length + ctx);
  return [
    `diff --git a/${f.path} b/${f.path}`,
    `--- a/${f.path}`,
    `+++ b/${f.path}`,
    `@@ -${start},${pre.length + before.length + post.length} +${start},${pre.length + after.length + post.length} @@`,
    ...pre.map((l) => ` ${l}`),
    ...before.map((l) => `-${l}`),
    ...after.map((l) => `+${l}`),
    ...post.map((l) => ` ${l}`),
  ].join('\n');
}

export function grepOutput(rng: Rng, files: RepoFile[], word: string): string {
  const hits: string[] = [];
  for (const f of files) f.lines.forEach((l, i) => l.includes(word) && hits.push(`${f.path}:${i + 1}:${l.trim()}`));
  return hits.length ? hits.slice(0, intBetween(8, 25, rng)).join('\n') : '(no matches)';
}

export function listing(files: RepoFile[], tests: string[]): string {
  return [
    '.',
    './pyproject.toml',
    './README.md',
    './setup.cfg',
    ...files.map((f) => `./${f.path}`),
    ...tests.map((t) => `./${t}`),
  ].join('\n');
}
