// Shell preset of the tool-semantics registry: which files a shell command reads and writes.
// A small tokenizer (quotes, escapes, heredocs, operators) then a table of commands.
// O(n) in the command length. Decisions: `ls`/`find`/`tree` are listings (stale on
// create/delete under the dir); `grep -r`, `git status`/`diff` are searches (stale on any
// write under the dir); `ps`, `top`, `docker ps`, `curl`, `date`… expire after
// DEFAULT_VOLATILE_TTL_CALLS calls; `python -c`/heredoc scripts write what their `open(…, 'w')`
// names, otherwise their writes are unknown (flagged, not invalidating).
import type { CallEffects, SourceEffect } from './types.ts';
import { dirUri, fileUri } from './uri.ts';

export const DEFAULT_VOLATILE_TTL_CALLS = 3;

interface Segment {
  words: string[];
  redirects: { op: string; target: string }[];
  /** Heredoc body fed to this segment's stdin. */
  heredoc?: string;
}

const READERS = new Set([
  'cat',
  'head',
  'tail',
  'less',
  'more',
  'nl',
  'bat',
  'wc',
  'tac',
  'xxd',
  'od',
  'file',
  'diff',
  'cmp',
  'md5sum',
  'sha256sum',
  'stat',
  'awk',
]);
const SEARCHERS = new Set(['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack']);
const LISTERS = new Set(['ls', 'find', 'tree', 'du']);
const VOLATILE = new Set([
  'ps',
  'top',
  'htop',
  'pgrep',
  'jobs',
  'date',
  'uptime',
  'df',
  'free',
  'netstat',
  'ss',
  'curl',
  'wget',
  'kubectl',
  'nvidia-smi',
  'lsof',
  'docker',
]);
const WRAPPERS = new Set(['sudo', 'time', 'nohup', 'env', 'command', 'exec', 'xargs', 'stdbuf']);
const PYTHONS = /^(python[0-9.]*|pypy3?)$/;

/** Splits a command line into segments at `&&`, `||`, `;`, `|`, `&` and newlines. */
export function parseShell(cmd: string): Segment[] {
  const segs: Segment[] = [];
  let cur: Segment = { words: [], redirects: [] };
  let word = '';
  let inWord = false;
  const pendingHeredocs: { seg: Segment; delim: string; strip: boolean }[] = [];
  const flushWord = (): void => {
    if (inWord) cur.words.push(word);
    word = '';
    inWord = false;
  };
  const flushSeg = (): void => {
    flushWord();
    // Redirect operators were pushed as words; fold `op target` pairs out of the word list.
    const words: string[] = [];
    for (let k = 0; k < cur.words.length; k++) {
      const w = cur.words[k];
      const m = /^(\d*|&)(>>|>&|>|<<<|<<-|<<|<)$/.exec(w);
      if (m && k + 1 < cur.words.length) {
        const target = cur.words[++k];
        if (m[2].startsWith('<<') && m[2] !== '<<<') {
          pendingHeredocs.push({ seg: cur, delim: target, strip: m[2] === '<<-' });
        } else cur.redirects.push({ op: m[1] + m[2], target });
      } else words.push(w);
    }
    cur.words = words;
    if (cur.words.length || cur.redirects.length) segs.push(cur);
    cur = { words: [], redirects: [] };
  };
  let i = 0;
  while (i < cmd.length) {
    const c = cmd[i];
    if (c === '\n') {
      flushSeg();
      i++;
      // Heredoc bodies start on the line after the operator.
      while (pendingHeredocs.length) {
        const h = pendingHeredocs.shift()!;
        const lines: string[] = [];
        while (i < cmd.length) {
          const end = cmd.indexOf('\n', i);
          const line = cmd.slice(i, end < 0 ? cmd.length : end);
          i = end < 0 ? cmd.length : end + 1;
          if ((h.strip ? line.replace(/^\t+/, '') : line) === h.delim) break;
          lines.push(line);
        }
        h.seg.heredoc = lines.join('\n');
      }
      continue;
    }
    if (c === '\\' && i + 1 < cmd.length) {
      if (cmd[i + 1] !== '\n') word += cmd[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = findClose(cmd, i + 1, c);
      const inner = cmd.slice(i + 1, end);
      word += c === '"' ? inner.replace(/\\(["\\$`])/g, '$1') : inner;
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === ' ' || c === '\t') {
      flushWord();
      i++;
      continue;
    }
    const two = cmd.slice(i, i + 2);
    if (two === '&&' || two === '||') {
      flushSeg();
      i += 2;
      continue;
    }
    if (c === ';' || c === '|' || (c === '&' && cmd[i + 1] !== '>')) {
      flushSeg();
      i++;
      continue;
    }
    if (c === '>' || c === '<' || (c === '&' && cmd[i + 1] === '>')) {
      const m = /^(&>>|&>|>>|>\||>&|>|<<<|<<-|<<|<)/.exec(cmd.slice(i))!;
      // A leading fd number (2>) belongs to the operator, not to the previous word.
      const fd = inWord && /^\d$/.test(word) ? word : '';
      if (fd) {
        word = '';
        inWord = false;
      } else flushWord();
      const op = m[1] === '>|' ? '>' : m[1];
      cur.words.push((fd || (op.startsWith('&') ? '&' : '')) + op.replace(/^&/, ''));
      i += m[1].length;
      continue;
    }
    word += c;
    inWord = true;
    i++;
  }
  flushSeg();
  return segs;
}

function findClose(s: string, from: number, q: string): number {
  for (let k = from; k < s.length; k++) {
    if (q === '"' && s[k] === '\\') {
      k++;
      continue;
    }
    if (s[k] === q) return k;
  }
  return s.length;
}

const isOpt = (w: string): boolean => w.startsWith('-') && w !== '-';
const isDevNull = (t: string): boolean =>
  t === '/dev/null' || t.startsWith('&') || /^\d$/.test(t) || t.startsWith('/dev/');

/** Effects of one shell command line. `cwd` is the session's default working directory. */
export function shellEffects(
  cmd: string,
  cwd?: string,
  knownScripts: Record<string, string[]> = {},
): CallEffects & { scripts?: Record<string, string[]> } {
  const effects: SourceEffect[] = [];
  const scripts: Record<string, string[]> = {};
  let ttl: CallEffects['ttl'];
  let unknownWrite = false;
  let dir = cwd;
  for (const seg of parseShell(cmd)) {
    let words = seg.words;
    while (words.length && (WRAPPERS.has(words[0]) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])))
      words = words.slice(1);
    if (words[0] === 'timeout') words = words.slice(2);
    for (const r of seg.redirects) {
      if (isDevNull(r.target)) continue;
      if (r.op.endsWith('<') || r.op === '<') effects.push({ uri: fileUri(r.target, dir), effect: 'read' });
      else if (r.op.includes('>')) {
        effects.push({ uri: fileUri(r.target, dir), effect: 'write', structural: true });
        // Remember what a heredoc-written script writes, for when it is run later.
        if (seg.heredoc !== undefined && /\.py$/.test(r.target))
          scripts[fileUri(r.target, dir)] = pythonWrites(seg.heredoc).map((f) => fileUri(f, dir));
      }
    }
    const name = (words[0] ?? '').replace(/^.*\//, '');
    const args = words.slice(1);
    const operands = args.filter((w) => !isOpt(w));
    if (name === 'cd') {
      if (operands[0]) dir = operands[0].startsWith('/') || !dir ? operands[0] : `${dir}/${operands[0]}`;
      continue;
    }
    if (name === 'sed') {
      const inPlace = args.some((w) => /^-i/.test(w) || w === '--in-place');
      const hasE = args.some((w) => w === '-e' || w === '-f');
      const files = operandsAfterScript(args, hasE, ['-e', '-f']);
      for (const f of files) effects.push({ uri: fileUri(f, dir), effect: inPlace ? 'write' : 'read' });
      continue;
    }
    if (name === 'tee') {
      for (const f of operands)
        if (!isDevNull(f)) effects.push({ uri: fileUri(f, dir), effect: 'write', structural: true });
      continue;
    }
    if (READERS.has(name)) {
      const files =
        name === 'awk' ? operands.slice(1) : name === 'head' || name === 'tail' ? skipNumericArgs(args) : operands;
      for (const f of files) if (f !== '-') effects.push({ uri: fileUri(f, dir), effect: 'read' });
      continue;
    }
    if (SEARCHERS.has(name)) {
      const recursive =
        name === 'rg' ||
        name === 'ag' ||
        name === 'ack' ||
        args.some((w) => /^-[A-Za-z]*[rR]/.test(w) || w === '--recursive');
      const hasE = args.some((w) => w === '-e' || w === '-f');
      const paths = operandsAfterScript(args, hasE, ['-e', '-f', '-A', '-B', '-C', '-m', '--include', '--exclude']);
      if (paths.length === 0 && recursive) effects.push({ uri: dirUri('.', dir), effect: 'search' });
      for (const p of paths) {
        const looksDir = recursive && (p.endsWith('/') || p === '.' || !/\.[A-Za-z0-9]+$/.test(p));
        effects.push(looksDir ? { uri: dirUri(p, dir), effect: 'search' } : { uri: fileUri(p, dir), effect: 'read' });
      }
      continue;
    }
    if (LISTERS.has(name)) {
      const paths =
        name === 'find'
          ? args.filter((w, k) => !isOpt(w) && (k === 0 || !isOpt(args[k - 1])) && !w.startsWith('(')).slice(0, 1)
          : operands;
      if (paths.length === 0) effects.push({ uri: dirUri('.', dir), effect: 'list' });
      for (const p of paths) effects.push({ uri: dirUri(p, dir), effect: 'list' });
      continue;
    }
    if (name === 'rm' || name === 'rmdir' || name === 'touch' || name === 'mkdir') {
      for (const f of operands) effects.push({ uri: fileUri(f, dir), effect: 'write', structural: true });
      continue;
    }
    if (name === 'mv' || name === 'cp' || name === 'ln' || name === 'install') {
      const dest = operands[operands.length - 1];
      if (name === 'mv')
        for (const f of operands.slice(0, -1))
          effects.push({ uri: fileUri(f, dir), effect: 'write', structural: true });
      if (dest) effects.push({ uri: fileUri(dest, dir), effect: 'write', structural: true });
      continue;
    }
    if (name === 'patch' || (name === 'git' && operands[0] === 'apply')) {
      const body = seg.heredoc ?? '';
      const targets = [...body.matchAll(/^\+\+\+ (?:b\/)?(\S+)/gm)].map((m) => m[1]).filter((t) => t !== '/dev/null');
      if (targets.length) for (const t of targets) effects.push({ uri: fileUri(t, dir), effect: 'write' });
      else effects.push({ uri: dirUri('.', dir), effect: 'write', structural: true });
      continue;
    }
    if (name === 'git') {
      const sub = operands[0];
      if (sub === 'status' || sub === 'diff' || sub === 'log' || sub === 'show' || sub === 'blame') {
        effects.push({ uri: dirUri('.', dir), effect: 'search' });
      } else if (sub === 'checkout' || sub === 'restore') {
        const dash = args.indexOf('--');
        const paths = dash >= 0 ? args.slice(dash + 1) : operands.slice(1).filter((p) => /[./]/.test(p));
        if (paths.length) for (const p of paths) effects.push({ uri: fileUri(p, dir), effect: 'write' });
        else effects.push({ uri: dirUri('.', dir), effect: 'write', structural: true });
      } else if (
        ['reset', 'stash', 'pull', 'merge', 'rebase', 'cherry-pick', 'revert', 'switch', 'clean', 'am'].includes(
          sub ?? '',
        )
      ) {
        effects.push({ uri: dirUri('.', dir), effect: 'write', structural: true });
      }
      continue;
    }
    if (PYTHONS.test(name)) {
      const cIdx = args.indexOf('-c');
      const code = cIdx >= 0 ? (args[cIdx + 1] ?? '') : (seg.heredoc ?? '');
      const named = pythonWrites(code).map((f) => fileUri(f, dir));
      const mIdx = args.indexOf('-m');
      const script = cIdx < 0 && mIdx < 0 ? operands[0] : undefined;
      const known = script ? knownScripts[fileUri(script, dir)] : undefined;
      for (const u of [...named, ...(known ?? [])]) effects.push({ uri: u, effect: 'write' });
      const testRunner =
        mIdx >= 0 && /^(pytest|unittest|doctest|pip|compileall|py_compile)$/.test(args[mIdx + 1] ?? '');
      const inlineHarmless = cIdx >= 0 && !/open\(|write|remove|rename|unlink|shutil|subprocess|os\.system/.test(code);
      // A script or module of unknown content may write anything: flag it rather than invalidate blindly.
      if (named.length === 0 && !known && !testRunner && !inlineHarmless) unknownWrite = true;
      continue;
    }
    if (VOLATILE.has(name)) {
      ttl = { calls: DEFAULT_VOLATILE_TTL_CALLS };
      effects.push({ uri: `proc://${name}`, effect: 'read' });
      continue;
    }
    if (
      ['make', 'npm', 'pip', 'cargo', 'go', 'pytest', 'tox', 'bash', 'sh', 'perl', 'ruby', 'node'].includes(name) &&
      !['ls', 'status'].includes(operands[0] ?? '')
    ) {
      if (name === 'perl' && args.some((w) => /^-[a-z]*i/.test(w))) {
        for (const f of operands.slice(1)) effects.push({ uri: fileUri(f, dir), effect: 'write' });
      } else if (name !== 'pytest' && name !== 'go' && name !== 'cargo') unknownWrite = true;
    }
  }
  return {
    effects,
    ttl,
    unknownWrite: unknownWrite || undefined,
    scripts: Object.keys(scripts).length ? scripts : undefined,
  };
}

function operandsAfterScript(args: string[], hasE: boolean, valued: string[]): string[] {
  const out: string[] = [];
  let scriptSeen = hasE;
  for (let k = 0; k < args.length; k++) {
    const w = args[k];
    if (valued.includes(w)) {
      k++;
      continue;
    }
    if (isOpt(w)) continue;
    if (!scriptSeen) {
      scriptSeen = true;
      continue;
    }
    out.push(w);
  }
  return out;
}

function skipNumericArgs(args: string[]): string[] {
  const out: string[] = [];
  for (let k = 0; k < args.length; k++) {
    const w = args[k];
    if (w === '-n' || w === '-c') {
      k++;
      continue;
    }
    if (isOpt(w)) continue;
    out.push(w);
  }
  return out;
}

/** Files a Python snippet opens for writing: open('x', 'w'|'a'|'x'), Path('x').write_text(…). */
export function pythonWrites(code: string): string[] {
  const out = new Set<string>();
  for (const m of code.matchAll(/open\(\s*(['"])([^'"]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])[^'"]*[wax+][^'"]*\3/g))
    out.add(m[2]);
  for (const m of code.matchAll(/Path\(\s*(['"])([^'"]+)\1\s*\)\.write_(?:text|bytes)\(/g)) out.add(m[2]);
  return [...out];
}
