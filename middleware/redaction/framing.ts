// Frames gateway notes so untrusted text cannot forge them: every note ctxgate writes starts
// with FRAME_MARKER, and any occurrence of the marker inside tool output or user text is
// escaped with a zero-width space before it reaches the model. O(n).

export const FRAME_MARKER = '[ctxgate]';
const ESCAPED = '[ctxgate\u200b]';
// Case-insensitive and tolerant of inner spaces, so `[ CTXGATE ]` cannot pass as a note either.
const MARKER_RE = /\[\s*ctxgate\s*\]/gi;

export function escapeFrame(text: string): string {
  return text.replace(MARKER_RE, ESCAPED);
}

/** A gateway note line; the body is escaped so it cannot nest a second marker. */
export function frameNote(body: string): string {
  return `${FRAME_MARKER} ${escapeFrame(body)}`;
}

export function isFramedNote(line: string): boolean {
  return line.startsWith(FRAME_MARKER);
}
