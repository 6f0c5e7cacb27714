// Where a tool definition carries prose for the model: the function's `description`, and the
// `description`/`title` strings of every schema reachable through JSON-Schema positions only
// (properties/*, items, prefixItems, anyOf/oneOf/allOf, not, if/then/else, $defs/definitions/*,
// additionalProperties, patternProperties/*, dependentSchemas/*, …). Values are never walked:
// `default`, `const`, `enum`, `examples` are the tool's contract, even when they hold objects
// with `title`/`description` keys. Shared by volatile-tools (what may be learned volatile) and the
// lossless checker (everything else must arrive exactly). O(size of the definition).

export type ToolPath = (string | number)[];

/** Keys whose string values are prose for the model, never part of the call contract. */
const PROSE_KEYS = ['description', 'title'] as const;
/** Keys holding one subschema (`items` may also be a draft-4 tuple array). */
const ONE = [
  'items',
  'not',
  'if',
  'then',
  'else',
  'additionalProperties',
  'additionalItems',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];
/** Keys holding an array of subschemas. */
const MANY = ['prefixItems', 'anyOf', 'oneOf', 'allOf'];
/** Keys holding a map of name -> subschema. */
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function schema(s: unknown, path: ToolPath, visit: (path: ToolPath, text: string) => void): void {
  if (!isObject(s)) return;
  for (const k of PROSE_KEYS) if (typeof s[k] === 'string') visit([...path, k], s[k] as string);
  // A path is built only for a subschema that is there (schema() returns at once on anything else).
  for (const k of ONE) {
    const v = s[k];
    if (Array.isArray(v)) v.forEach((x, i) => schema(x, [...path, k, i], visit));
    else if (isObject(v)) schema(v, [...path, k], visit);
  }
  for (const k of MANY) {
    const v = s[k];
    if (Array.isArray(v)) v.forEach((x, i) => schema(x, [...path, k, i], visit));
  }
  for (const k of MAP) {
    const v = s[k];
    if (isObject(v)) for (const [name, x] of Object.entries(v)) schema(x, [...path, k, name], visit);
  }
}

/** Every prose string of a tool's `function` object, with its path from that object. */
export function toolProse(fn: unknown, visit: (path: ToolPath, text: string) => void): void {
  if (!isObject(fn)) return;
  if (typeof fn.description === 'string') visit(['description'], fn.description);
  schema(fn.parameters, ['parameters'], visit);
}
