// Builds the bytes sent upstream with as little work as possible: a splice into the client's raw
// bytes (the tenant's `cache_salt`, and `stream_options` for streams that lack it) when the body is
// otherwise unchanged, and one JSON.stringify only when the pipeline or the config changed the
// body or the client sent a `cache_salt` of its own (always replaced: a tenant must not pick
// another tenant's cache namespace). The splice writes in place when the caller hands over the
// raw bytes' allocation with room after them (body/read-body.ts): it writes only from the closing
// brace on, and the body memo, which may keep these bytes, holds only those before that brace
// (body/body-memo.ts). Without a room (a body Node delivered as one chunk) the splice is copied
// into one new buffer: undici sends a buffer body with its header in one socket write (cork,
// two writes, uncork). Two pieces (the client's bytes as a view, and the addition) went as an
// async iterable: one write per piece, a drain wait and promises per piece, 13-23 µs more CPU per
// call than the copy at 4-66 KB in in-process A/Bs on a loaded 2-core host, the copy's extra
// ArrayBuffer (and the GCs it paces) included. All give the same bytes.
// Cost: O(bytes after the last `}`) for a splice in place, plus O(body) for a copy; O(body) to stringify.

const INCLUDE_USAGE = ',"stream_options":{"include_usage":true}';

/** The upstream body: the client's bytes, a splice of them, or a new serialisation. */
export type UpstreamBytes = Buffer | string;

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
      return {
        bytes: Buffer.concat([raw.subarray(0, end), Buffer.from(add), raw.subarray(end + 1)]),
        clientWantsUsage,
      };
    }
  }
  const out: Record<string, unknown> = { ...body };
  if (upstreamModel !== undefined) out.model = upstreamModel;
  if (needUsage) out.stream_options = { ...(so ?? {}), include_usage: true };
  if (cacheSalt !== undefined) out.cache_salt = cacheSalt;
  return { bytes: JSON.stringify(out), clientWantsUsage };
}
