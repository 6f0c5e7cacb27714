// SHA-256 (FIPS 180-4) in plain JavaScript, for the block-hash chain's small messages: a parent hash
// (16 hex characters) followed by a block's token ids as uint32 little-endian, 80 bytes for a
// 16-token block, two compression rounds. At that size node:crypto's one-shot hash costs ~2 µs a
// block, mostly the call into C++, the Buffer it returns and the hex string made from it; this
// costs ~1 µs and reads the ids straight into the message schedule (no byte buffer). It returns
// what `sha256(utf8(parent) ‖ ids LE).toString('hex', 0, 8)` returns, or undefined where it does
// not apply (a parent with a character above U+007F or a length not a multiple of 4, where the
// ids would not start on a word): the caller then hashes with node:crypto.
// Cost: O(parent + ids) integer work, no allocation but the 16-character result.

/** Round constants: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
/** Initial hash value: the first 32 bits of the fractional parts of the square roots of the first 8 primes. */
const IV = Int32Array.from([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
const HEX = Int32Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

const H = new Int32Array(8);
/** The message schedule; its first 16 words are the current 64-byte chunk, big-endian. */
const W = new Int32Array(64);

function compress(): void {
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15];
    const b = W[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0];
  let b = H[1];
  let c = H[2];
  let d = H[3];
  let e = H[4];
  let f = H[5];
  let g = H[6];
  let h = H[7];
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0;
  H[1] = (H[1] + b) | 0;
  H[2] = (H[2] + c) | 0;
  H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0;
  H[5] = (H[5] + f) | 0;
  H[6] = (H[6] + g) | 0;
  H[7] = (H[7] + h) | 0;
}

/** A little-endian uint32 read as the big-endian word SHA-256 sees in its place. */
const swap = (x: number): number => (x >>> 24) | ((x >>> 8) & 0xff00) | ((x & 0xff00) << 8) | (x << 24) | 0;

/**
 * First 8 bytes, as 16 lowercase hex characters, of sha256(parent's ASCII bytes ‖ ids[start, end)
 * as uint32 LE); undefined when the parent has a non-ASCII character or a length not a multiple of 4.
 */
export function sha256Head(parent: string, ids: ArrayLike<number>, start: number, end: number): string | undefined {
  const pl = parent.length;
  if ((pl & 3) !== 0) return undefined;
  for (let i = 0; i < pl; i++) if (parent.charCodeAt(i) > 0x7f) return undefined;
  H.set(IV);
  const parentWords = pl >> 2;
  const words = parentWords + (end - start);
  let w = 0;
  for (let i = 0; i < words; i++) {
    if (i < parentWords) {
      const o = i << 2;
      W[w] =
        (parent.charCodeAt(o) << 24) |
        (parent.charCodeAt(o + 1) << 16) |
        (parent.charCodeAt(o + 2) << 8) |
        parent.charCodeAt(o + 3);
    } else W[w] = swap(ids[start + i - parentWords] >>> 0);
    if (++w === 16) {
      compress();
      w = 0;
    }
  }
  // Padding: a 1 bit, zeros, then the message length in bits as a 64-bit big-endian number.
  W[w++] = 0x80000000 | 0;
  if (w > 14) {
    while (w < 16) W[w++] = 0;
    compress();
    w = 0;
  }
  while (w < 14) W[w++] = 0;
  const bytes = words * 4;
  W[14] = Math.floor(bytes / 0x20000000) | 0;
  W[15] = (bytes * 8) | 0;
  compress();
  const x = H[0];
  const y = H[1];
  return String.fromCharCode(
    HEX[x >>> 28],
    HEX[(x >>> 24) & 15],
    HEX[(x >>> 20) & 15],
    HEX[(x >>> 16) & 15],
    HEX[(x >>> 12) & 15],
    HEX[(x >>> 8) & 15],
    HEX[(x >>> 4) & 15],
    HEX[x & 15],
    HEX[y >>> 28],
    HEX[(y >>> 24) & 15],
    HEX[(y >>> 20) & 15],
    HEX[(y >>> 16) & 15],
    HEX[(y >>> 12) & 15],
    HEX[(y >>> 8) & 15],
    HEX[(y >>> 4) & 15],
    HEX[y & 15],
  );
}
