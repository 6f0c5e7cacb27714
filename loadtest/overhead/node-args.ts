// Node flags of `bench overhead`'s proxy processes: every proxy (bare, ctxgate, Portkey) starts
// with the gateway image's flags (gateway/node-flags.ts: a generic V8 GC knob, not ctxgate code),
// so the three are compared like for like; ctxgate's process may add a candidate setting after
// them (`--gateway-node-flags`, an A/B of a GC flag) and a CPU profile (`--cpu-prof DIR`).
import { GATEWAY_NODE_FLAGS } from '../../gateway/node-flags.ts';

/** Node flags of the child serving ctxgate: the gateway's as deployed (the image's ENTRYPOINT),
 *  then `extra` (a candidate V8 setting: V8 takes a flag's last value), plus a CPU profile when asked. */
export function proxiesNodeArgs(cpuProfDir?: string, extra: readonly string[] = []): string[] {
  return [...GATEWAY_NODE_FLAGS, ...extra, ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [])];
}

/** `--gateway-node-flags`'s value as flags: split on whitespace; each must start with `--` (a bare
 *  word would reach node as the script to run). */
export function parseGatewayNodeFlags(v: string | undefined): string[] {
  const flags = (v ?? '').split(/\s+/).filter((x) => x !== '');
  const bad = flags.find((x) => !x.startsWith('--'));
  if (bad !== undefined) throw new Error(`--gateway-node-flags: ${bad} is not a --flag`);
  return flags;
}

/** Node flags of the bare proxy's own process: the gateway's (like for like). */
export function bareProxyNodeArgs(): string[] {
  return [...GATEWAY_NODE_FLAGS];
}

/** Node flags of Portkey's process: the proxies' own (a generic V8 GC knob), so that the
 *  comparison is like for like rather than a tuned gateway against Node's defaults. */
export function portkeyNodeArgs(): string[] {
  return [...GATEWAY_NODE_FLAGS];
}
