// How each agent CLI is pointed at ctxgate, non-interactively, with its default settings otherwise:
// its config files under a temporary HOME, the env it reads, and the command line. Nothing here
// may reach the network: telemetry, update checks and model-list fetches are switched off, and the
// environment is built from scratch (no API key or proxy of the machine leaks into an agent).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENTS, type AgentPackage } from './install.ts';
import type { AgentRig } from './rig.ts';

export interface AgentRunSpec {
  args: string[];
  env: Record<string, string>;
}

export interface AgentDef {
  pkg: AgentPackage;
  /** Ingress API the agent speaks (the `api` of its usage records). */
  api: 'openai-chat' | 'anthropic-messages' | 'openai-responses';
  prepare(rig: AgentRig, home: string, work: string, prompt: string): AgentRunSpec;
}

/** The base environment every agent gets: PATH and locale from the host, everything else ours. */
export function baseEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {
    HOME: home,
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    CI: '1',
    DO_NOT_TRACK: '1',
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: join(home, 'tmp'),
  };
  for (const k of ['XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_STATE_HOME', 'TMPDIR'])
    mkdirSync(env[k], { recursive: true });
  return env;
}

const writeJson = (file: string, v: unknown): void => {
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, JSON.stringify(v, null, 2));
};

export const QWEN_CODE: AgentDef = {
  pkg: AGENTS['qwen-code'],
  api: 'openai-chat',
  prepare(rig, home, _work, prompt) {
    writeJson(join(home, '.qwen', 'settings.json'), {
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { enableAutoUpdate: false },
    });
    return {
      args: ['--auth-type', 'openai', prompt],
      env: { ...baseEnv(home), OPENAI_BASE_URL: `${rig.url}/v1`, OPENAI_API_KEY: rig.key, OPENAI_MODEL: rig.model },
    };
  },
};

export const OPENCODE: AgentDef = {
  pkg: AGENTS.opencode,
  api: 'openai-chat',
  prepare(rig, home, _work, prompt) {
    const model = `ctxgate/${rig.model}`;
    const config = {
      $schema: 'https://opencode.ai/config.json',
      model,
      small_model: model,
      autoupdate: false,
      share: 'disabled',
      provider: {
        ctxgate: {
          npm: '@ai-sdk/openai-compatible',
          name: 'ctxgate',
          options: { baseURL: `${rig.url}/v1`, apiKey: rig.key },
          models: { [rig.model]: { name: rig.model, limit: { context: 131_072, output: 32_768 } } },
        },
      },
    };
    return {
      args: ['run', prompt],
      env: {
        ...baseEnv(home),
        OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_SHARE: '1',
      },
    };
  },
};

export const CLAUDE_CODE: AgentDef = {
  pkg: AGENTS['claude-code'],
  api: 'anthropic-messages',
  prepare(rig, home, _work, prompt) {
    return {
      args: ['-p', prompt],
      env: {
        ...baseEnv(home),
        ANTHROPIC_BASE_URL: rig.url,
        ANTHROPIC_API_KEY: rig.key,
        ANTHROPIC_MODEL: rig.model,
        ANTHROPIC_SMALL_FAST_MODEL: rig.model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: rig.model,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
      },
    };
  },
};

export const CODEX: AgentDef = {
  pkg: AGENTS.codex,
  api: 'openai-responses',
  prepare(rig, home, _work, prompt) {
    const codexHome = join(home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        `model = "${rig.model}"`,
        'model_provider = "ctxgate"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.ctxgate]',
        'name = "ctxgate"',
        `base_url = "${rig.url}/v1"`,
        'env_key = "CTXGATE_API_KEY"',
        'wire_api = "responses"',
        '',
        '[analytics]',
        'enabled = false',
        '',
      ].join('\n'),
    );
    return {
      args: ['exec', '--skip-git-repo-check', prompt],
      env: { ...baseEnv(home), CODEX_HOME: codexHome, CTXGATE_API_KEY: rig.key },
    };
  },
};

export const AGENT_DEFS: AgentDef[] = [QWEN_CODE, OPENCODE, CLAUDE_CODE, CODEX];
