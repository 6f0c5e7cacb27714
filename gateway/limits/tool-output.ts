// Caps what a session keeps of one tool output: middleware that stores tool outputs in session
// state (ledger originals, artifacts) calls capToolOutput so state cannot grow with an
// attacker-sized output. The cut lands on a UTF-8 boundary and says how much was dropped.
// O(n) in the kept bytes. Settings: limits.max_tool_output_bytes.
import { DEFAULT_MAX_TOOL_OUTPUT_BYTES } from '../config/schema.ts';

export interface CappedText {
  text: string;
  truncated: boolean;
  /** Bytes of the original output (UTF-8). */
  bytes: number;
}

export function capToolOutput(text: string, maxBytes: number = DEFAULT_MAX_TOOL_OUTPUT_BYTES): CappedText {
  // A string of n UTF-16 units is at most 3n UTF-8 bytes: skip the encode when clearly under.
  if (text.length * 3 <= maxBytes) return { text, truncated: false, bytes: Buffer.byteLength(text, 'utf8') };
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { text, truncated: false, bytes };
  const buf = Buffer.from(text, 'utf8');
  let end = maxBytes;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--; // back off a continuation byte
  const kept = buf.subarray(0, end).toString('utf8');
  return { text: `${kept}\n… [${bytes - end} bytes truncated by the gateway]`, truncated: true, bytes };
}
