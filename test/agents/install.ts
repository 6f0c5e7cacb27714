// Pinned agent CLIs for the agent tier, installed from npm into a cache outside the repository
// (`${CTXGATE_AGENTS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ctxgate-agents}/<pkg>@<version>`), once:
// a finished install leaves a marker, so later runs only check it. Installs go to a temporary
// folder renamed into place, so an interrupted install is never mistaken for a finished one.
// Installs run in parallel. Run directly (`npx tsx test/agents/install.ts [id…]`) to pre-install
// and print timings.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface AgentPackage {
  /** Short name used in test names and fixture files. */
  id: string;
  pkg: string;
  version: string;
  /** The executable under node_modules/.bin. */
  bin: string;
}

/** The versions the tier runs; bump deliberately (a new version may change the request stream). */
export const AGENTS: Record<string, AgentPackage> = {
  'qwen-code': { id: 'qwen-code', pkg: '@qwen-code/qwen-code', version: '0.24.4', bin: 'qwen' },
  opencode: { id: 'opencode', pkg: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
  'claude-code': { id: 'claude-code', pkg: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude' },
  codex: { id: 'codex', pkg: '@openai/codex', version: '0.171.0', bin: 'codex' },
};

const INSTALL_TIMEOUT_MS = 5 * 60_000;

export function agentCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CTXGATE_AGENTS_CACHE) return env.CTXGATE_AGENTS_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ctxgate-agents');
}

export interface Installed {
  agent: AgentPackage;
  /** Absolute path of the CLI. */
  bin: string;
  /** Seconds spent installing (0 when it was cached). */
  installS: number;
}

function npmInstall(cwd: string, spec: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', spec], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => void (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => void (output += c.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, output: output + err.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Installs (or finds) one agent CLI; throws with npm's output when the install fails. */
export async function ensureAgent(agent: AgentPackage, root = agentCacheRoot()): Promise<Installed> {
  const dir = join(root, `${agent.pkg.replace('/', '+')}@${agent.version}`);
  const bin = join(dir, 'node_modules', '.bin', agent.bin);
  const marker = join(dir, '.installed');
  if (existsSync(marker) && existsSync(bin)) return { agent, bin, installS: 0 };
  mkdirSync(root, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  // A package.json of its own, so npm never walks up into another project.
  writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: 'ctxgate-agent-cache', private: true }));
  const t0 = performance.now();
  const r = await npmInstall(tmp, `${agent.pkg}@${agent.version}`);
  if (r.code !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`npm install ${agent.pkg}@${agent.version} failed (exit ${r.code}):\n${r.output}`);
  }
  writeFileSync(join(tmp, '.installed'), `${agent.pkg}@${agent.version}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return { agent, bin, installS: (performance.now() - t0) / 1000 };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const wanted = process.argv.slice(2);
  const t0 = performance.now();
  const list = Object.values(AGENTS).filter((a) => !wanted.length || wanted.includes(a.id));
  for (const r of await Promise.all(list.map((a) => ensureAgent(a)))) {
    console.log(
      `${r.agent.pkg}@${r.agent.version}: ${r.installS ? `installed in ${r.installS.toFixed(1)} s` : 'cached'} (${r.bin})`,
    );
  }
  console.log(`all: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
