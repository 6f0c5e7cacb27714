// Source URIs and their matching. Paths are normalised (./, .., //) and resolved against the
// command's cwd when it is known; a relative path matches an absolute one that ends with it,
// because agents mix `src/a.py` and `/testbed/src/a.py` for the same file. Over-matching only
// adds a tombstone; under-matching would leave a stale read unmarked.
import { posix } from 'node:path';

export function normPath(p: string, cwd?: string): string {
  let s = p.trim();
  if (s.startsWith('~')) return posix.normalize(s);
  if (!s.startsWith('/') && cwd) s = posix.join(cwd, s);
  s = posix.normalize(s);
  if (s.length > 1 && s.endsWith('/')) s = s.slice(0, -1);
  if (s.startsWith('./')) s = s.slice(2);
  return s === '' ? '.' : s;
}

export const fileUri = (p: string, cwd?: string): string => `file://${normPath(p, cwd)}`;
export const dirUri = (p: string, cwd?: string): string => `dir://${normPath(p, cwd)}`;

export function uriPath(uri: string): string {
  const i = uri.indexOf('://');
  return i < 0 ? uri : uri.slice(i + 3);
}

function samePath(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.startsWith('/') === b.startsWith('/')) return false;
  const [abs, rel] = a.startsWith('/') ? [a, b] : [b, a];
  return rel !== '.' && abs.endsWith('/' + rel);
}

/** Whether path `p` lies inside directory `dir` (or is it). */
export function underDir(p: string, dir: string): boolean {
  if (dir === '.' || dir === '/') return true;
  if (samePath(p, dir)) return true;
  if (p.startsWith(dir + '/')) return true;
  if (!dir.startsWith('/') && !p.startsWith('/')) return false;
  // Mixed absolute/relative: compare on the relative side's suffix.
  if (dir.startsWith('/') && !p.startsWith('/')) return false;
  const idx = p.indexOf('/' + dir + '/');
  return idx >= 0;
}

/** Does a write to `w` make the read `r` stale? */
export function writeInvalidates(
  w: { uri: string; structural?: boolean },
  r: { uri: string; effect: string },
): boolean {
  const wp = uriPath(w.uri);
  const rp = uriPath(r.uri);
  const wIsDir = w.uri.startsWith('dir://');
  if (r.effect === 'read') return wIsDir ? underDir(rp, wp) : samePath(wp, rp);
  if (r.effect === 'search') return underDir(wp, rp) || (wIsDir && underDir(rp, wp));
  if (r.effect === 'list')
    return (w.structural === true || wIsDir) && (underDir(wp, rp) || (wIsDir && underDir(rp, wp)));
  return false;
}
