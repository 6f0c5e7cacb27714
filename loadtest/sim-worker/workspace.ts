// The agent's workspace as the worker sees it: the working directory the prompt names (agents
// state it in their system prompt: "Working directory: /x", "currently working in the
// directory: /x", `cwd: /x`, `<cwd>/x</cwd>`) and the files in it. Files are listed from disk only under
// directories the worker was told it may list (`workspaceRoots`; none by default, so a worker
// never reveals its host's files), else taken from paths the prompt mentions. Bounded: the
// prompt scan reads at most MAX_SCAN_CHARS, the listing at most MAX_FILES entries two levels deep.
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

export interface Workspace {
  /** Absolute working directory, when the prompt names one. */
  dir?: string;
  /** Absolute paths of regular files in it (sorted, so choices are deterministic). */
  files: string[];
}

const MAX_SCAN_CHARS = 256 * 1024;
const MAX_FILES = 200;
const SKIP_DIRS = new Set(['node_modules', '.git', '.venv', '__pycache__', 'dist', 'build']);

const DIR_PATTERNS = [
  /(?:working|current|project|workspace)[ _-]?(?:directory|dir|folder|root)(?: is)?\s*[:=]?\s*[`'"<]?(\/[^\s`'"<>]*)/i,
  /\bcwd\s*[:=]\s*[`'"]?(\/[^\s`'"<>]*)/i,
  /working in the directory:?\s*[`'"]?(\/[^\s`'"<>]*)/i,
  /<cwd>\s*(\/[^\s<>]*)\s*<\/cwd>/,
];

/** The working directory a prompt names, trailing punctuation dropped; undefined if none. */
export function workingDirOf(text: string): string | undefined {
  const t = text.length > MAX_SCAN_CHARS ? text.slice(0, MAX_SCAN_CHARS) : text;
  for (const re of DIR_PATTERNS) {
    const m = re.exec(t);
    if (m) {
      const d = m[1].replace(/[.,;:)\]]+$/, '').replace(/\/+$/, '');
      return d || '/';
    }
  }
  return undefined;
}

/** Relative or absolute file paths the prompt mentions under `dir` (e.g. a folder listing). */
export function mentionedFiles(text: string, dir: string): string[] {
  const t = text.length > MAX_SCAN_CHARS ? text.slice(0, MAX_SCAN_CHARS) : text;
  const out = new Set<string>();
  for (const m of t.matchAll(
    /(?:^|[\s`'"(├└─│])((?:\/|\.\/)?[\w.-]+(?:\/[\w.-]+)*\.[A-Za-z0-9]{1,8})(?=$|[\s`'",:;)])/gm,
  )) {
    const p = m[1];
    if (/^\d+(\.\d+)+$/.test(p) || /^[\w-]+\.(com|org|io|net|dev)$/.test(p)) continue;
    const abs = isAbsolute(p) ? p : join(dir, p);
    if (abs === dir || !abs.startsWith(dir + '/')) continue;
    out.add(abs);
    if (out.size >= MAX_FILES) break;
  }
  return [...out].sort();
}

function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

/** Regular files under `dir` (two levels, hidden and build folders skipped), or undefined. */
export function listFiles(dir: string, roots: readonly string[]): string[] | undefined {
  if (!roots.length) return undefined;
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return undefined;
  }
  const allowed = roots.some((r) => {
    try {
      return within(realpathSync(resolve(r)), real);
    } catch {
      return false;
    }
  });
  if (!allowed) return undefined;
  const out: string[] = [];
  const walk = (d: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= MAX_FILES) return;
      if (name.startsWith('.') || SKIP_DIRS.has(name)) continue;
      const p = d + sep + name;
      let st;
      try {
        st = lstatSync(p); // symlinks are not followed: nothing outside the allowed root is listed
      } catch {
        continue;
      }
      if (st.isFile()) out.push(join(dir, relative(real, p)));
      else if (st.isDirectory() && depth < 1) walk(p, depth + 1);
    }
  };
  walk(real, 0);
  return out.sort();
}

/** The workspace a prompt describes; files from disk where allowed, else from the prompt. */
export function workspaceOf(text: string, roots: readonly string[] = []): Workspace {
  const dir = workingDirOf(text);
  if (!dir) return { files: [] };
  return { dir, files: listFiles(dir, roots) ?? mentionedFiles(text, dir) };
}
