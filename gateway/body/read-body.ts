// Reads a request body into one buffer, in place of Fastify's `parseAs: 'buffer'` reader (which
// copies the chunks into a buffer of exactly the body's size). A body that arrived as one chunk
// with an allocation of its own (Node's HTTP parser copies each body chunk into a new buffer) is
// used as it came: no copy at all, and no second ArrayBuffer of the body's size. Young-generation
// GCs are paced by the bytes ArrayBuffers allocate (V8 scavenges once young ones reach twice the
// default semi-space), and a copy of the body was ~40 % of them per growing-session call. The
// upstream body then goes out in two pieces, the client's bytes and the splice (proxy/body.ts).
// A body of several chunks is copied once into a buffer with BODY_ROOM spare bytes after it, so
// the splice (the tenant's `cache_salt`, `stream_options`) is written in place there.
// Same checks, errors and order as Fastify's reader (fastify/lib/content-type-parser.js rawBody):
// a declared content-length over the limit is refused before reading; the bytes received over the
// limit stop the read; a received length that is not the declared one is refused; a stream error
// reaches `done` with status 400 unless it carries a 4xx/5xx of its own.
// Cost: O(body) one copy for a body of several chunks, none for one of one chunk.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { errorCodes } from 'fastify';

/**
 * Spare bytes allocated after each body: room for `,"stream_options":{"include_usage":true}` (40)
 * and `,"cache_salt":"…"` (a salt of up to ~180 characters). A splice that needs more copies.
 */
export const BODY_ROOM = 256;

export type BodyDone = (err: Error | null, body?: Buffer, room?: Buffer) => void;

/** The payload as Fastify hands it to a content-type parser (a preParsing stream may add this). */
type Payload = (IncomingMessage | Readable) & { receivedEncodedLength?: number };

/**
 * One body's read. Its listeners are bound methods, not arrows or nested functions: tsx compiles
 * with esbuild's keepNames, which names every such function per request (Object.defineProperty,
 * ~0.5-1 µs each, three per request here before); bind does not.
 */
class BodyRead {
  private received = 0;
  private readonly chunks: Buffer[] = [];
  readonly onData: (chunk: Buffer | string) => void;
  readonly onEnd: (err?: Error & { statusCode?: number }) => void;

  constructor(
    private readonly payload: Payload,
    private readonly contentLength: number,
    private readonly limit: number,
    private readonly done: BodyDone,
  ) {
    this.onData = this.data.bind(this);
    this.onEnd = this.end.bind(this);
  }

  private data(chunk: Buffer | string): void {
    // A custom preParsing stream may still emit strings.
    const c = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.received += c.length;
    const encoded = this.payload.receivedEncodedLength ?? 0;
    if (this.received > this.limit || encoded > this.limit) {
      this.off();
      this.done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    this.chunks.push(c);
  }

  private end(err?: Error & { statusCode?: number }): void {
    this.off();
    const { done, chunks, received, contentLength } = this;
    if (err != null) {
      if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
      done(err);
      return;
    }
    if (!Number.isNaN(contentLength) && (this.payload.receivedEncodedLength || received) !== contentLength) {
      done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    const only = chunks.length === 1 ? chunks[0] : undefined;
    if (only !== undefined && only.byteOffset === 0 && only.buffer.byteLength === only.length) {
      done(null, only);
      return;
    }
    const room = Buffer.allocUnsafe(received + BODY_ROOM);
    let at = 0;
    for (const c of chunks) at += c.copy(room, at);
    done(null, room.subarray(0, received), room);
  }

  private off(): void {
    const { payload } = this;
    payload.removeListener('data', this.onData);
    payload.removeListener('end', this.onEnd);
    payload.removeListener('error', this.onEnd);
  }
}

/**
 * Reads `payload` whole. `done(null, body, room)`: `body` is the bytes received; `room`, when the
 * body was copied, the allocation it starts (body.length + BODY_ROOM bytes), which only the
 * request's owner may write. A body received as one chunk that is its own allocation comes
 * without a room (nobody writes it).
 */
export function readBody(payload: Payload, declaredLength: string | undefined, limit: number, done: BodyDone): void {
  const contentLength = Number(declaredLength);
  if (contentLength > limit) {
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  const r = new BodyRead(payload, contentLength, limit, done);
  payload.on('data', r.onData);
  payload.on('end', r.onEnd);
  payload.on('error', r.onEnd);
  payload.resume();
}
