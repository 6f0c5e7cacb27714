// The tools array's JSON and the two keys the pipeline derives from it (the render memo's context
// key, the call fingerprint's tools hash), computed once per tools array instead of every call:
// agents resend the same tools each call and layout/resent.ts interns them to one array per
// session, so serialising and hashing ~6 kB of schemas twice per call repeated the same work.
// Keyed by the array object like the message hashes (layout/segmentation.ts): a request's parsed
// objects are never changed in place once received (stages copy on write).
// Cost: O(1) per call for an array seen before (plus the template variables' JSON, a few bytes);
// otherwise one JSON.stringify and two SHA-1s, as before.
import { hash } from 'node:crypto';
import type { ToolDef } from '../types.ts';

/** SHA-1, base64, first 16 characters (the pipeline's short hash). */
export const shortSha1 = (s: string): string => hash('sha1', s, 'base64').slice(0, 16);

export interface ToolsKey {
  /** JSON.stringify(tools ?? []). */
  readonly json: string;
  /** shortSha1(json). */
  readonly toolsHash: string;
  /** shortSha1(json + '\u0000' + JSON.stringify(extra ?? {})). */
  readonly contextKey: string;
}

interface Entry extends ToolsKey {
  /** The template variables' JSON the context key was made with (the last seen with this array). */
  readonly extraJson: string;
}

const memo = new WeakMap<readonly ToolDef[], Entry>();
let none: Entry | undefined;

/** The keys of `tools` (undefined: no tools) with template variables `extra`. */
export function toolsKey(tools: readonly ToolDef[] | undefined, extra: Record<string, unknown> | undefined): ToolsKey {
  const extraJson = JSON.stringify(extra ?? {});
  const known = tools === undefined ? none : memo.get(tools);
  if (known !== undefined && known.extraJson === extraJson) return known;
  const json = known?.json ?? JSON.stringify(tools ?? []);
  const e: Entry = {
    json,
    toolsHash: known?.toolsHash ?? shortSha1(json),
    extraJson,
    contextKey: shortSha1(json + '\u0000' + extraJson),
  };
  if (tools === undefined) none = e;
  else memo.set(tools, e);
  return e;
}
