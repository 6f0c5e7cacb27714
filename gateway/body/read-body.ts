// Reads a request body into one buffer with BODY_ROOM spare bytes after it, in place of Fastify's
// `parseAs: 'buffer'` reader (which copies the chunks into a buffer of exactly the body's size).
// The spare bytes let proxy/body.ts splice the tenant's `cache_salt` (and `stream_options`) into a
// body nobody else holds without a second buffer of the body's size: one copy of a 64 KB body and
// one 64 KB ArrayBuffer less per passthrough call (young-generation GCs are triggered by the
// external bytes ArrayBuffers allocate, so fewer of them too).
// Same checks, errors and order as Fastify's reader (fastify/lib/content-type-parser.js rawBody):
// a declared content-length over the limit is refused before reading; the bytes received over the
// limit stop the read; a received length that is not the declared one is refused; a stream error
// reaches `done` with status 400 unless it carries a 4xx/5xx of its own.
// Cost: O(body) one copy, as before.
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
 * Reads `payload` whole. `done(null, body, room)`: `body` is the bytes received, `room` the
 * allocation it starts (body.length + BODY_ROOM bytes), which only the request's owner may write.
 */
export function readBody(payload: Payload, declaredLength: string | undefined, limit: number, done: BodyDone): void {
  const contentLength = Number(declaredLength);
  if (contentLength > limit) {
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  let received = 0;
  const chunks: Buffer[] = [];
  const onData = (chunk: Buffer | string): void => {
    // A custom preParsing stream may still emit strings.
    const c = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += c.length;
    const encoded = payload.receivedEncodedLength ?? 0;
    if (received > limit || encoded > limit) {
      off();
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    chunks.push(c);
  };
  const onEnd = (err?: Error & { statusCode?: number }): void => {
    off();
    if (err != null) {
      if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
      done(err);
      return;
    }
    if (!Number.isNaN(contentLength) && (payload.receivedEncodedLength || received) !== contentLength) {
      done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    const room = Buffer.allocUnsafe(received + BODY_ROOM);
    let at = 0;
    for (const c of chunks) at += c.copy(room, at);
    done(null, room.subarray(0, received), room);
  };
  function off(): void {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}
