// Tool-call arguments a coding model would plausibly write: values of the declared JSON-schema
// type that also validate against the schema's constraints (enum, const, min/max, minLength,
// minItems, anyOf/oneOf), and, where a property's name says what it holds, a meaningful value
// from the agent's workspace (a file that exists for `file_path`, the working directory for
// `path`/`dir`, a read-only shell command for `command`, a glob for `pattern`). Only required
// keys are written, so `additionalProperties: false` always holds. O(schema size) per call.
import type { Workspace } from './workspace.ts';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  description?: string;
}

/** What a tool is for, guessed from its name and parameters; decides which tools get called. */
export type ToolKind = 'read' | 'list' | 'glob' | 'grep' | 'shell' | 'other';

/** Tools that change state or reach outside the workspace: never picked while a safe one is offered. */
const UNSAFE =
  /write|edit|replace|patch|delete|remove|rm\b|create|move|rename|todo|task|agent|memory|web|fetch|url|http|ask|question|skill|exit|plan|save|install|notebook|image|screenshot|browser|goal|stdin|input/i;

export function toolKind(name: string, schema: JsonSchema | undefined): ToolKind {
  if (UNSAFE.test(name)) return 'other';
  const keys = Object.keys(schema?.properties ?? {}).join(' ');
  if (/shell|bash|exec|terminal|command/i.test(name) || /\bcommand\b/.test(keys)) return 'shell';
  if (/grep|search/i.test(name)) return 'grep';
  if (/glob|find/i.test(name)) return 'glob';
  if (/list|(^|_)ls$|^ls|dir/i.test(name)) return 'list';
  if (/read|view|cat|open|get_file/i.test(name)) return 'read';
  return 'other';
}

const WORDS =
  'cache prefix block token worker request model layout session context file line test build router value state check path'.split(
    ' ',
  );

const pick = <T>(items: readonly T[], rand: () => number): T => items[Math.floor(rand() * items.length)];
const words = (rand: () => number, n: number): string => Array.from({ length: n }, () => pick(WORDS, rand)).join(' ');

/** Quotes a path for a POSIX shell (single quotes; embedded quotes closed and escaped). */
const shq = (s: string): string => (/^[\w./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function extOf(file: string): string | undefined {
  const m = /\.([A-Za-z0-9]{1,8})$/.exec(file);
  return m?.[1];
}

function baseOf(file: string): string {
  return file.slice(file.lastIndexOf('/') + 1);
}

/** A string for property `key` of a tool of `kind`, meaningful where the name says what it holds. */
function stringFor(key: string, kind: ToolKind, ws: Workspace, rand: () => number): string {
  const k = key.toLowerCase();
  const dir = ws.dir ?? '.';
  const file = ws.files.length ? pick(ws.files, rand) : undefined;
  if (/command|cmd|script/.test(k)) {
    if (!file) return `ls -la ${shq(dir)}`;
    return pick([`ls -la ${shq(dir)}`, `cat ${shq(file)}`, `head -n 40 ${shq(file)}`, `wc -l ${shq(file)}`], rand);
  }
  if (/pattern|glob/.test(k)) {
    if (kind === 'grep') return file ? baseOf(file).replace(/\..*$/, '').replace(/[^\w]/g, '') || 'TODO' : 'TODO';
    const ext = file && extOf(file);
    return ext ? `**/*.${ext}` : '**/*';
  }
  if (/dir|folder|cwd|workdir|root/.test(k)) return dir;
  if (/path|file/.test(k)) {
    // A list/glob/grep tool's `path` is where to look; a read tool's is what to read.
    if (kind === 'list' || kind === 'glob' || kind === 'grep' || !file) return dir;
    return file;
  }
  if (/description|reason|explanation|summary|title/.test(k))
    return `Inspect the ${kind === 'shell' ? 'workspace' : 'file'} before changing anything`;
  if (/query|text|content|prompt|message/.test(k)) return words(rand, 3);
  return words(rand, 1 + Math.floor(rand() * 3));
}

function fitLength(v: string, s: JsonSchema): string {
  let out = v;
  if (s.minLength !== undefined) while (out.length < s.minLength) out += 'x';
  if (s.maxLength !== undefined && out.length > s.maxLength) out = out.slice(0, s.maxLength);
  return out;
}

function numberFor(key: string, s: JsonSchema, integer: boolean): number {
  let lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : 0.5) : undefined);
  let hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - (integer ? 1 : 0.5) : undefined);
  if (integer) {
    lo = lo !== undefined ? Math.ceil(lo) : undefined;
    hi = hi !== undefined ? Math.floor(hi) : undefined;
  }
  // Offsets start at the beginning; limits, counts and timeouts get a modest positive value.
  let v = /offset|start|skip|line/i.test(key) ? 1 : /timeout/i.test(key) ? 60_000 : 50;
  if (lo !== undefined && v < lo) v = lo;
  if (hi !== undefined && v > hi) v = hi;
  return v;
}

export function valueFor(
  key: string,
  schema: JsonSchema | undefined,
  kind: ToolKind,
  ws: Workspace,
  rand: () => number,
  depth = 0,
): unknown {
  const s = schema ?? {};
  if ('const' in s) return s.const;
  if (s.enum?.length) return pick(s.enum, rand);
  const branch = s.anyOf?.[0] ?? s.oneOf?.[0];
  if (branch && !s.type) return valueFor(key, branch, kind, ws, rand, depth + 1);
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ['string'];
  const type = types.find((t) => t !== 'null') ?? types[0];
  switch (type) {
    case 'integer':
      return numberFor(key, s, true);
    case 'number':
      return numberFor(key, s, false);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const n = Math.max(1, s.minItems ?? 0);
      const len = s.maxItems !== undefined ? Math.min(n, s.maxItems) : n;
      return Array.from({ length: len }, () => (depth > 8 ? null : valueFor(key, s.items, kind, ws, rand, depth + 1)));
    }
    case 'object':
      return depth > 8 ? {} : argumentsFor(s, kind, ws, rand, depth + 1);
    default:
      return fitLength(stringFor(key, kind, ws, rand), s);
  }
}

/** Arguments holding exactly the schema's required keys, each valid for its sub-schema. */
export function argumentsFor(
  schema: JsonSchema | undefined,
  kind: ToolKind,
  ws: Workspace,
  rand: () => number,
  depth = 0,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of schema?.required ?? []) out[key] = valueFor(key, schema?.properties?.[key], kind, ws, rand, depth);
  return out;
}
