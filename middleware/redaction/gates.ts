// Gates of redact.ts's rule groups: one test a text must pass for any rule of the group to match
// (a necessary condition, so skipping the group on a failed gate keeps every match); rules sharing
// a gate object test it once per text.

/** What every match of the case-sensitive token rules (anthropic … jwt) holds: each rule's literal opening. */
export const TOKEN_GATE =
  /sk-|[sr]k_(?:live|test)_|A(?:KI|SI|BI|CC)A|gh[pousr]_|github_pat_|glpat-|xox[bpars]-|AIza|hf_|npm_|SG\.|eyJ/;
/** The literals the case-insensitive structural rules (private_key, putty_key, azure_key, authorization,
 * bearer, basic_auth) match, lower-cased. Without the `u` flag an ASCII letter matches only its two
 * ASCII cases, and toLowerCase maps those onto the lower one whatever surrounds them: a text with a
 * match has the literal in its lower-cased copy (one lower-casing and a few indexOf, where each
 * rule's scan costs about one indexOf each over all its starting letters). */
const STRUCTURAL = [
  '-----begin ',
  'putty-user-key-file-',
  'accountkey=',
  'sharedaccesskey=',
  'sig=',
  'authorization',
  'bearer',
  'basic',
];
export const STRUCTURAL_GATE = (text: string): boolean => {
  const lower = text.toLowerCase();
  for (const s of STRUCTURAL) if (lower.includes(s)) return true;
  return false;
};
