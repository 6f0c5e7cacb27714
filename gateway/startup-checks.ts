// Checks run before the gateway listens, so a bad deployment fails at start with the config field
// named (exit 2) instead of answering every request with 500: each model's tokenizer and chat
// template are loaded and test-rendered; `auth: none` on an address other than loopback is refused
// unless listen.allow_unauthenticated says it is meant. O(models) template renders, once.
import { isIP } from 'node:net';
import { loadTokenizer } from '../middleware/tokens/registry.ts';
import { ConfigError } from './config/load.ts';
import type { GatewayConfig } from './config/schema.ts';

const PROBE = [
  { role: 'system', content: 'ctxgate start-up check' },
  { role: 'user', content: 'hello' },
  { role: 'assistant', content: 'hi' },
  { role: 'user', content: 'bye' },
];

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

export function checkListen(config: GatewayConfig): void {
  if (config.auth.mode === 'none' && !isLoopback(config.listen.host) && !config.listen.allow_unauthenticated) {
    throw new ConfigError(
      'listen.allow_unauthenticated',
      `config: refusing to serve without authentication on ${config.listen.host}: set auth.mode: keys, listen on 127.0.0.1, or set listen.allow_unauthenticated: true if every client on that network may use it`,
    );
  }
}

export async function checkModels(config: GatewayConfig): Promise<void> {
  for (const [i, m] of config.models.entries()) {
    if (!m.tokenizer) continue;
    let tok;
    try {
      tok = await loadTokenizer(m.tokenizer, { chatTemplateFile: m.chat_template });
    } catch (err) {
      const field =
        m.chat_template && /template|ENOENT|EACCES/i.test((err as Error).message)
          ? `models[${i}].chat_template`
          : `models[${i}].tokenizer`;
      throw new ConfigError(
        field,
        `config: invalid config at ${field}: cannot load it for model '${m.name}': ${(err as Error).message}`,
      );
    }
    try {
      const text = tok.renderChat(PROBE);
      if (tok.encode(text).length === 0) throw new Error('the rendered probe encodes to no tokens');
    } catch (err) {
      const field = m.chat_template ? `models[${i}].chat_template` : `models[${i}].tokenizer`;
      throw new ConfigError(
        field,
        `config: invalid config at ${field}: the chat template of model '${m.name}' fails on a plain conversation: ${(err as Error).message}`,
      );
    }
  }
}
