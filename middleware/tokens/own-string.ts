// A string that shares no storage with the string it came from. V8 makes a slice of 13 or more
// characters a view into its parent (and a concatenation a pair of references), so a key or value
// kept in a long-lived map can hold a whole prompt alive through a few of its characters; the
// caches of this folder keep copies instead. O(length), on insert only.

/** Shortest string V8 makes a substring of as a view into its parent (SlicedString::kMinLength). */
const SLICE_MIN_CHARS = 13;

/** `s` as a copy of its own: the concatenation is flattened by the slice into a new string one
 *  character longer than `s`, which the returned slice alone refers to. */
export function ownString(s: string): string {
  return s.length < SLICE_MIN_CHARS ? s : (' ' + s).slice(1);
}
