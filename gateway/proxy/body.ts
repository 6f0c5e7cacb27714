// Builds the bytes sent upstream with as little work as possible: a splice into the client's raw
// bytes (the tenant's `cache_salt`, and `stream_options` for streams that lack it) when the body is
// otherwise unchanged, and one JSON.stringify only when the pipeline or the config changed the
// body or the client sent a `cache_salt` of its own (always replaced: a tenant must not pick
// another tenant's cache namespace). The splice writes in place when the caller hands over the
// raw bytes' allocation with room after them (body/read-body.ts): it writes only from the closing
// brace on, and the body memo, which may keep these bytes, holds only those before that brace
// (body/body-memo.ts). Without a room, a body over SPLICE_PIECES_MIN_BYTES goes as two pieces, the
// client's bytes up to the brace (a view, not a copy) and the addition with what followed the
// brace; undici writes them one after the other (proxy/upstream-response.ts). A smaller one is
// copied into one buffer (Node's shared pool: no ArrayBuffer of its own). All give the same bytes.
// Copying every such body into one buffer (one socket write instead of two) was tried and undone:
// in a quiet same-window A/B (bench overhead --only growing --no-portkey, A R F F R A) the copy's
// process read 1.69 / 1.56 ms of CPU per request at 16 connections, two pieces 1.39 / 1.36 (runs
// drift), and 1.63 vs 1.60 ms in alternating rounds side by side: the copy's new ArrayBuffer of a
// body's size a call bought nothing measurable.
// Cost: O(bytes after the last `}`) for a splice, plus O(body) for a copy; O(body) to stringify.

const INCLUDE_USAGE = ',"stream_options":{"include_usage":true}';

/**
 * A body without a room at least this long is sent as two pieces rather than copied: Buffer.concat
 * takes a smaller one from Node's shared pool (Buffer.poolSize / 2), a longer one gets an ArrayBuffer
 * of its own, which is what paces young-generation GCs.
 */
export const SPLICE_PIECES_MIN_BYTES = Buffer.poolSize >>> 1;

/** The upstream body: one buffer or string, or pieces sent in order (their bytes concatenated). */
export type UpstreamBytes = Buffer | string | readonly Buffer[];

/** The pieces' bytes as one buffer (tests, captures); a buffer or string as it is. */
export function joinedBytes(b: UpstreamBytes): Buffer | string {
  return typeof b === 'string' || Buffer.isBuffer(b) ? b : Buffer.concat(b);
}

export interface UpstreamBody {
  bytes: UpstreamBytes;
  /** Whether the client asked for the usage chunk itself (else the gateway strips it). */
  clientWantsUsage: boolean;
}

interface StreamOptions {
  include_usage?: unknown;
  [k: string]: unknown;
}

export function upstreamBody(
  /** The client's bytes when they are the upstream body's source; undefined when an adapter translated. */
  raw: Buffer | undefined,
  parsed: Record<string, unknown>,
  body: Record<string, unknown>,
  stream: boolean,
  upstreamModel: string | undefined,
  cacheSalt?: string,
  /** `raw`'s allocation (raw is its start), writable from raw's last `}` on: the splice may go in place. */
  room?: Buffer,
): UpstreamBody {
  const so = body.stream_options as StreamOptions | undefined | null;
  const clientWantsUsage = stream && !!so && so.include_usage === true;
  const changed =
    !raw ||
    body !== parsed ||
    (upstreamModel !== undefined && upstreamModel !== body.model) ||
    Object.hasOwn(parsed, 'cache_salt');
  const needUsage = stream && !clientWantsUsage;
  if (raw && !changed && !needUsage && cacheSalt === undefined) return { bytes: raw, clientWantsUsage };
  if (raw && !changed && (!needUsage || so === undefined)) {
    const end = raw.lastIndexOf(0x7d); // the closing brace of the top-level object
    if (end > 0) {
      const add =
        (needUsage ? INCLUDE_USAGE : '') +
        (cacheSalt !== undefined ? `,"cache_salt":${JSON.stringify(cacheSalt)}` : '') +
        '}';
      if (room !== undefined) {
        const n = Buffer.byteLength(add);
        const length = raw.length + n - 1;
        if (length <= room.length) {
          // The bytes after the closing brace move first (copy is memmove-safe), then the addition
          // overwrites the brace and the gap.
          room.copy(room, end + n, end + 1, raw.length);
          room.write(add, end, 'utf8');
          return { bytes: room.subarray(0, length), clientWantsUsage };
        }
      }
      const head = raw.subarray(0, end);
      if (raw.length >= SPLICE_PIECES_MIN_BYTES)
        return { bytes: [head, Buffer.concat([Buffer.from(add), raw.subarray(end + 1)])], clientWantsUsage };
      return { bytes: Buffer.concat([head, Buffer.from(add), raw.subarray(end + 1)]), clientWantsUsage };
    }
  }
  const out: Record<string, unknown> = { ...body };
  if (upstreamModel !== undefined) out.model = upstreamModel;
  if (needUsage) out.stream_options = { ...(so ?? {}), include_usage: true };
  if (cacheSalt !== undefined) out.cache_salt = cacheSalt;
  return { bytes: JSON.stringify(out), clientWantsUsage };
}
