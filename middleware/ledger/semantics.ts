// Tool-semantics registry: maps one tool call to the sources it read and wrote. Presets for
// shell tools (mini-swe-agent `bash`, OpenHands `execute_bash`, Claude Code `Bash`, Codex
// `shell`), `str_replace_editor` (SWE-agent/OpenHands), Claude Code file tools, Codex
// `apply_patch`, SWE-agent's windowed-editor commands in text mode, and the common `read_file` /
// `write_file` / `edit_file` (no `command`) tools of Cline, Qwen Code, Cursor and ctxgate's
// synthetic agent; config rules cover other tools (tool name + argument path → URI + effect).
// Config rules win over presets.
import type { CallEffects, Effect, SourceEffect, ToolInvocation } from './types.ts';
import { shellEffects } from './shell.ts';
import { dirUri, fileUri } from './uri.ts';

export interface SemanticsRule {
  tool: string;
  /** Dotted path into the arguments (`path`, `args.file`, `$.target.path`); arrays fan out. */
  path: string;
  effect: Effect;
  structural?: boolean;
  scheme?: 'file' | 'dir';
}

export interface SemanticsOptions {
  /** Default working directory of relative paths (e.g. `/testbed`). */
  cwd?: string;
  rules?: SemanticsRule[];
  /** Script files written earlier → files they write (see shellEffects). */
  scripts?: Record<string, string[]>;
  /** SWE-agent's currently open file. */
  openFile?: string;
}

export interface ResolvedEffects extends CallEffects {
  scripts?: Record<string, string[]>;
  openFile?: string;
  /** Short human label of the call (command or tool + path). */
  label: string;
}

const SHELL_TOOLS = new Set([
  'bash',
  'shell',
  'execute_bash',
  'run_shell_command',
  'terminal',
  'exec_command',
  'local_shell',
  'run_command',
  'cmd',
]);
const EDITOR_TOOLS = new Set(['str_replace_editor', 'str_replace_based_edit_tool', 'text_editor', 'edit_file']);

export function callEffects(inv: ToolInvocation, opts: SemanticsOptions = {}): ResolvedEffects {
  const tool = inv.tool;
  const lower = tool.toLowerCase();
  const args = inv.args ?? {};
  const rules = (opts.rules ?? []).filter((r) => r.tool === tool);
  if (rules.length) return ruleEffects(rules, args, opts.cwd, tool);
  if (lower === 'apply_patch')
    return patchEffects(str(args.input) ?? str(args.patch) ?? str(args.command) ?? '', opts.cwd);
  if (SHELL_TOOLS.has(lower)) {
    const cmd = args.command ?? args.cmd;
    if (Array.isArray(cmd)) {
      const parts = cmd.map(String);
      if (parts[0] === 'apply_patch') return patchEffects(parts[1] ?? '', opts.cwd);
      const line = /^(ba)?sh$/.test(parts[0] ?? '') && parts.length >= 3 ? parts[parts.length - 1] : parts.join(' ');
      return shellLike(line, opts, typeof args.workdir === 'string' ? args.workdir : opts.cwd);
    }
    return shellLike(String(cmd ?? ''), opts, opts.cwd);
  }
  if (EDITOR_TOOLS.has(lower) && (args.command !== undefined || lower !== 'edit_file'))
    return editorEffects(args, opts.cwd);
  const filePath = str(args.path) ?? str(args.absolute_path) ?? str(args.file_path) ?? str(args.target_file);
  if (filePath !== undefined && (lower === 'read_file' || lower === 'edit_file' || lower === 'write_file'))
    return one(
      fileUri(filePath, opts.cwd),
      lower === 'read_file' ? 'read' : 'write',
      `${tool} ${filePath}`,
      lower === 'write_file',
    );
  switch (tool) {
    case 'Read':
      return one(fileUri(String(args.file_path ?? ''), opts.cwd), 'read', `Read ${args.file_path}`);
    case 'Edit':
    case 'MultiEdit':
      return one(fileUri(String(args.file_path ?? ''), opts.cwd), 'write', `${tool} ${args.file_path}`);
    case 'Write':
      return one(fileUri(String(args.file_path ?? ''), opts.cwd), 'write', `Write ${args.file_path}`, true);
    case 'NotebookEdit':
      return one(fileUri(String(args.notebook_path ?? ''), opts.cwd), 'write', `NotebookEdit ${args.notebook_path}`);
    case 'Glob':
    case 'LS':
      return one(dirUri(String(args.path ?? '.'), opts.cwd), 'list', `${tool} ${args.pattern ?? args.path ?? '.'}`);
    case 'Grep':
      return one(dirUri(String(args.path ?? '.'), opts.cwd), 'search', `Grep ${args.pattern ?? ''}`);
    case 'swe-agent':
      return sweAgentEffects(String(args.command ?? ''), opts);
    default:
      return { effects: [], unknownWrite: true, label: tool };
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function one(uri: string, effect: Effect, label: string, structural?: boolean): ResolvedEffects {
  return { effects: [{ uri, effect, ...(structural ? { structural } : {}) }], label };
}

function shellLike(cmd: string, opts: SemanticsOptions, cwd: string | undefined): ResolvedEffects {
  if (/^\s*apply_patch\b/.test(cmd)) return patchEffects(cmd, cwd);
  const e = shellEffects(cmd, cwd, opts.scripts);
  return { ...e, label: cmd };
}

function editorEffects(args: Record<string, unknown>, cwd?: string): ResolvedEffects {
  const sub = String(args.command ?? '');
  const path = String(args.path ?? '');
  const label = `${sub} ${path}`;
  if (sub === 'view') {
    // A path without an extension is most likely a directory listing.
    return /\.[A-Za-z0-9]+$/.test(path)
      ? one(fileUri(path, cwd), 'read', label)
      : one(dirUri(path, cwd), 'list', label);
  }
  if (sub === 'create') return one(fileUri(path, cwd), 'write', label, true);
  if (['str_replace', 'insert', 'undo_edit', 'edit', 'write'].includes(sub))
    return one(fileUri(path, cwd), 'write', label);
  return { effects: [], label };
}

/** Codex patches: `*** Update File: p`, `*** Add File: p`, `*** Delete File: p`, `*** Move to: p`. */
export function patchEffects(patch: string, cwd?: string): ResolvedEffects {
  const effects: SourceEffect[] = [];
  for (const m of patch.matchAll(/^\*\*\* (Update|Add|Delete) File: (.+?)\s*$/gm)) {
    effects.push({ uri: fileUri(m[2], cwd), effect: 'write', ...(m[1] === 'Update' ? {} : { structural: true }) });
  }
  for (const m of patch.matchAll(/^\*\*\* Move to: (.+?)\s*$/gm))
    effects.push({ uri: fileUri(m[1], cwd), effect: 'write', structural: true });
  return { effects, label: `apply_patch ${effects.map((e) => e.uri.replace('file://', '')).join(' ')}`.trim() };
}

/** SWE-agent ACI commands; anything else is a shell command. */
function sweAgentEffects(command: string, opts: SemanticsOptions): ResolvedEffects {
  const words = command.trim().split(/\s+/);
  const [name, a1] = words;
  const open = opts.openFile;
  const cwd = opts.cwd;
  const label = command.split('\n')[0];
  switch (name) {
    case 'open':
      return { ...one(fileUri(a1 ?? '', cwd), 'read', label), openFile: fileUri(a1 ?? '', cwd) };
    case 'create':
      return { ...one(fileUri(a1 ?? '', cwd), 'write', label, true), openFile: fileUri(a1 ?? '', cwd) };
    case 'goto':
    case 'scroll_up':
    case 'scroll_down':
      return open ? one(open, 'read', label) : { effects: [], label };
    case 'edit':
    case 'insert':
      return open ? one(open, 'write', label) : { effects: [], unknownWrite: true, label };
    case 'search_file':
      return words[2]
        ? one(fileUri(words[2], cwd), 'read', label)
        : open
          ? one(open, 'read', label)
          : { effects: [], label };
    case 'search_dir':
    case 'find_file':
      return one(dirUri(words[2] ?? '.', cwd), name === 'find_file' ? 'list' : 'search', label);
    case 'submit':
      return { effects: [], label };
    default:
      return shellLike(command, opts, cwd);
  }
}

function ruleEffects(
  rules: SemanticsRule[],
  args: Record<string, unknown>,
  cwd: string | undefined,
  tool: string,
): ResolvedEffects {
  const effects: SourceEffect[] = [];
  for (const r of rules) {
    for (const v of pick(args, r.path)) {
      const uri = /^[a-z][a-z0-9+.-]*:\/\//.test(v) ? v : r.scheme === 'dir' ? dirUri(v, cwd) : fileUri(v, cwd);
      effects.push({ uri, effect: r.effect, ...(r.structural ? { structural: true } : {}) });
    }
  }
  return { effects, label: `${tool} ${effects.map((e) => e.uri).join(' ')}`.trim() };
}

function pick(obj: unknown, path: string): string[] {
  const keys = path
    .replace(/^\$\.?/, '')
    .split('.')
    .filter(Boolean);
  let cur: unknown[] = [obj];
  for (const k of keys) {
    const next: unknown[] = [];
    for (const c of cur) {
      const v = c && typeof c === 'object' ? (c as Record<string, unknown>)[k] : undefined;
      if (Array.isArray(v)) next.push(...v);
      else if (v !== undefined) next.push(v);
    }
    cur = next;
  }
  return cur.filter((v): v is string => typeof v === 'string' && v.length > 0);
}

/** Command of a text-mode agent: the last fenced block of the assistant's content. */
export function textModeCommand(content: string): string | undefined {
  const fences = [...content.matchAll(/```([A-Za-z0-9_-]*)[ \t]*\n([\s\S]*?)\n?```/g)];
  if (fences.length === 0) return undefined;
  const preferred = fences.filter((f) => /^(bash|sh|shell|console)?$/.test(f[1]));
  const f = (preferred.length ? preferred : fences)[(preferred.length ? preferred : fences).length - 1];
  const cmd = f[2].trim();
  return cmd.length ? cmd : undefined;
}

/** Exit code printed by the common agent harnesses, or null. */
export function parseExitCode(output: string): number | null {
  // Each pattern needs its literal: a native substring search skips a regex scan of an output
  // (most) that has none.
  const m =
    (output.includes('<returncode>') ? /<returncode>\s*(-?\d+)\s*<\/returncode>/.exec(output) : null) ??
    (output.includes('[Command finished with exit code ')
      ? /\[Command finished with exit code (-?\d+)\]/.exec(output)
      : null) ??
    (output.includes('Exit code: ') ? /^Exit code: (-?\d+)/m.exec(output) : null) ??
    (output.includes('"exit_code"') ? /"exit_code"\s*:\s*(-?\d+)/.exec(output) : null);
  return m ? Number(m[1]) : null;
}
