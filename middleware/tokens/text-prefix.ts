// Prefix and suffix tests of long strings, as String.prototype.startsWith / endsWith answer them.
// V8 compares startsWith/endsWith one character at a time (~1 ns a character: ~15 µs for the
// ~15 kB window renderings the incremental render compares several times a call); a slice
// compared with === is one flat memory compare (~1 µs). Same answer: both compare UTF-16 code units.

/** s.startsWith(p). */
export function hasPrefix(s: string, p: string): boolean {
  return s.length >= p.length && s.slice(0, p.length) === p;
}

/** s.endsWith(p). */
export function hasSuffix(s: string, p: string): boolean {
  return s.length >= p.length && s.slice(s.length - p.length) === p;
}
