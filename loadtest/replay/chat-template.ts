// The chat template a replay or demo fleet renders with (workers and gateway alike, so their token
// ids agree): --chat-template FILE, else a per-tokenizer default, else the tokenizer's own.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Chat templates used when --chat-template is not given, per tokenizer. The template bundled with
 * the DeepSeek-V3 tokenizer drops the tools list (and tool calls that come with content), which
 * hides every effect that lives in the tools (tool-shuffle); this one renders them as DeepSeek does.
 */
export const DEFAULT_CHAT_TEMPLATES: Readonly<Record<string, string>> = {
  deepseek_v3: 'configs/templates/deepseek-v3-tools.jinja',
};

/** --chat-template, else the tokenizer's default above (resolved from the repository root), else none. */
export function chatTemplateFor(tokenizer: string, given: string | undefined): string | undefined {
  if (given === 'none') return undefined;
  if (given) {
    if (!existsSync(given)) throw new Error(`--chat-template: no such file '${given}'`);
    return resolve(given);
  }
  const def = DEFAULT_CHAT_TEMPLATES[tokenizer];
  return def ? resolve(dirname(fileURLToPath(import.meta.url)), '../..', def) : undefined;
}
