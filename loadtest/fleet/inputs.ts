// Reads `bench fleet` inputs: Mooncake JSONL files (recognised by their first record's hash_ids)
// merged on one clock, sorted, rate-scaled and cut to the duration. One interner for all files,
// so equal hash-id prefixes in different files share blocks, as in the released traces.
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { arrange, ChainInterner, parseMooncake, type FleetRequest } from './trace.ts';

export interface InputOptions {
  rateScale: number;
  durationS?: number;
}

function firstLine(text: string): string {
  for (const line of text.split('\n', 64)) if (line.trim()) return line.trim();
  return '';
}

export function isMooncakeText(text: string): boolean {
  try {
    const o = JSON.parse(firstLine(text)) as Record<string, unknown>;
    return typeof o === 'object' && o !== null && Array.isArray(o.hash_ids) && 'input_length' in o;
  } catch {
    return false;
  }
}

export async function loadFleetInputs(paths: string[], o: InputOptions): Promise<FleetRequest[]> {
  const chain = new ChainInterner();
  const all: FleetRequest[] = [];
  for (const p of paths) {
    const raw = await readFile(p);
    const text = (p.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
    if (!isMooncakeText(text))
      throw new Error(
        `${p}: not a Mooncake trace (one JSON object a line with timestamp, input_length, output_length, hash_ids)`,
      );
    all.push(...parseMooncake(text, p, chain, all.length));
  }
  return arrange(all, o.rateScale, o.durationS);
}
