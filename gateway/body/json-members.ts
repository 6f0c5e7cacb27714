// Where the members of a top-level JSON object lie in its raw bytes, and where the elements of
// each array member lie: the map the incremental body parse (incremental-parse.ts) uses to reuse
// a previous call's parsed values for the bytes two bodies share. A scan, not a parser: on a
// valid document the offsets are exact; on an invalid one it may answer anything or undefined,
// and JSON.parse of the same bytes decides validity. It can resume after a member's value or
// after an element of an array member, so a body that extends an earlier one is scanned only
// from where it differs. O(bytes scanned); long strings are crossed with indexOf (json-depth.ts).
// It also counts the arrays and objects in each value (the body memo charges what it keeps by them).
import { stringEnd } from '../limits/json-depth.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;

/** One member of the top-level object: byte offsets in the body (ends exclusive). */
export interface Member {
  key: string;
  /** The value's first byte and the byte after its last. */
  vs: number;
  ve: number;
  /** Arrays and objects in the value, itself included. */
  c: number;
  /** Array values only: [start, end, start, end, ...] of each element. */
  elems?: number[];
  /** Array values only: arrays and objects in the elements up to and including each one. */
  ec?: number[];
}

/** Where a scan resumes: after the value of `members`' last entry, or after the last element of
 * `open` (an array member, not in `members`) when given. `pos` is that value's or element's end. */
export interface Resume {
  members: Member[];
  open?: Member & { elems: number[]; ec: number[] };
  pos: number;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function ws(buf: Uint8Array, i: number): number {
  while (i < buf.length && isWs(buf[i])) i++;
  return i;
}

/** Arrays and objects skipValue has passed (read as a difference around a call). */
let opened = 0;

/** The end of the value starting at `i` (exclusive), or -1. Brackets are counted, not matched. */
function skipValue(buf: Uint8Array, i: number): number {
  const n = buf.length;
  const c = buf[i];
  if (c === QUOTE) {
    const e = stringEnd(buf, i + 1);
    return e < n ? e + 1 : -1;
  }
  if (c === OPEN_OBJ || c === OPEN_ARR) {
    let depth = 0;
    for (; i < n; i++) {
      const b = buf[i];
      if (b === QUOTE) {
        i = stringEnd(buf, i + 1);
        if (i >= n) return -1;
      } else if (b === OPEN_OBJ || b === OPEN_ARR) {
        depth++;
        opened++;
      } else if (b === CLOSE_OBJ || b === CLOSE_ARR) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  const s = i;
  while (i < n) {
    const b = buf[i];
    if (b === COMMA || b === CLOSE_OBJ || b === CLOSE_ARR || isWs(b)) break;
    i++;
  }
  return i > s ? i : -1;
}

/** Elements from `i` (just after `[`, or after an element when `after`) to the closing bracket;
 * returns the index after it, or -1. */
function scanElems(buf: Uint8Array, i: number, elems: number[], ec: number[], after: boolean): number {
  i = ws(buf, i);
  if (buf[i] === CLOSE_ARR) return i + 1;
  if (after) {
    if (buf[i] !== COMMA) return -1;
    i = ws(buf, i + 1);
  }
  let sum = ec.length > 0 ? ec[ec.length - 1] : 0;
  for (;;) {
    const s = i;
    const o = opened;
    i = skipValue(buf, i);
    if (i < 0) return -1;
    elems.push(s, i);
    sum += opened - o;
    ec.push(sum);
    i = ws(buf, i);
    if (buf[i] === COMMA) i = ws(buf, i + 1);
    else return buf[i] === CLOSE_ARR ? i + 1 : -1;
  }
}

/** A key's string from its quoted bytes [s, e): JSON.parse only when it holds an escape. */
function keyAt(buf: Buffer, s: number, e: number): string | undefined {
  for (let i = s + 1; i < e - 1; i++) {
    if (buf[i] !== BACKSLASH) continue;
    try {
      return JSON.parse(buf.toString('utf8', s, e)) as string;
    } catch {
      return undefined;
    }
  }
  return buf.toString('utf8', s + 1, e - 1);
}

/**
 * The members of the top-level object in `buf`, from the start or from `resume` (whose members
 * are kept as they are: the bytes before `resume.pos` are trusted to be those they were scanned
 * from). Undefined when the bytes are not an object this scan understands.
 */
export function scanMembers(buf: Buffer, resume?: Resume): Member[] | undefined {
  const n = buf.length;
  let members: Member[];
  let i: number;
  if (resume === undefined) {
    i = ws(buf, 0);
    if (buf[i] !== OPEN_OBJ) return undefined;
    members = [];
    i = ws(buf, i + 1);
    if (buf[i] === CLOSE_OBJ) return ws(buf, i + 1) === n ? members : undefined;
  } else {
    members = resume.members.slice();
    i = resume.pos;
    if (resume.open) {
      const o = resume.open;
      const elems = o.elems.slice();
      const ec = o.ec.slice();
      i = scanElems(buf, i, elems, ec, true);
      if (i < 0) return undefined;
      members.push({ key: o.key, vs: o.vs, ve: i, c: 1 + (ec.length > 0 ? ec[ec.length - 1] : 0), elems, ec });
    }
    i = ws(buf, i);
    if (buf[i] === CLOSE_OBJ) return ws(buf, i + 1) === n ? members : undefined;
    if (buf[i] !== COMMA) return undefined;
    i = ws(buf, i + 1);
  }
  for (;;) {
    if (buf[i] !== QUOTE) return undefined;
    const ke = stringEnd(buf, i + 1);
    if (ke >= n) return undefined;
    const key = keyAt(buf, i, ke + 1);
    if (key === undefined) return undefined;
    i = ws(buf, ke + 1);
    if (buf[i] !== COLON) return undefined;
    const vs = ws(buf, i + 1);
    if (buf[vs] === OPEN_ARR) {
      const elems: number[] = [];
      const ec: number[] = [];
      i = scanElems(buf, vs + 1, elems, ec, false);
      if (i < 0) return undefined;
      members.push({ key, vs, ve: i, c: 1 + (ec.length > 0 ? ec[ec.length - 1] : 0), elems, ec });
    } else {
      const o = opened;
      i = skipValue(buf, vs);
      if (i < 0) return undefined;
      members.push({ key, vs, ve: i, c: opened - o });
    }
    i = ws(buf, i);
    if (buf[i] === CLOSE_OBJ) return ws(buf, i + 1) === n ? members : undefined;
    if (buf[i] !== COMMA) return undefined;
    i = ws(buf, i + 1);
  }
}
