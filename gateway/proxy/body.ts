// Builds the bytes sent upstream with as little work as possible: the client's raw bytes when the
// body is unchanged, a splice of `stream_options` into the raw bytes for streams that lack it, and
// one JSON.stringify only when the pipeline or the config changed the body.

const INCLUDE_USAGE = ',"stream_options":{"include_usage":true}}';

export interface UpstreamBody {
  bytes: Buffer | string;
  /** Whether the client asked for the usage chunk itself (else the gateway strips it). */
  clientWantsUsage: boolean;
}

interface StreamOptions {
  include_usage?: unknown;
  [k: string]: unknown;
}

export function upstreamBody(
  raw: Buffer,
  parsed: Record<string, unknown>,
  body: Record<string, unknown>,
  stream: boolean,
  upstreamModel: string | undefined,
): UpstreamBody {
  const so = body.stream_options as StreamOptions | undefined | null;
  const clientWantsUsage = stream && !!so && so.include_usage === true;
  const changed = body !== parsed || (upstreamModel !== undefined && upstreamModel !== body.model);
  if (!changed && (!stream || clientWantsUsage)) return { bytes: raw, clientWantsUsage };
  if (!changed && so === undefined) {
    const end = raw.lastIndexOf(0x7d); // the closing brace of the top-level object
    if (end > 0) return { bytes: Buffer.concat([raw.subarray(0, end), Buffer.from(INCLUDE_USAGE), raw.subarray(end + 1)]), clientWantsUsage };
  }
  const out: Record<string, unknown> = { ...body };
  if (upstreamModel !== undefined) out.model = upstreamModel;
  if (stream && !clientWantsUsage) out.stream_options = { ...(so ?? {}), include_usage: true };
  return { bytes: JSON.stringify(out), clientWantsUsage };
}
